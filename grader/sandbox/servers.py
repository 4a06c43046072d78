"""Fake servers run by the harness, in its own process, beside the candidate's commands.

They live in the harness (root inside the sandbox, or at least a process the candidate does not
own), so the candidate can reach their OpenAI routes on loopback but cannot signal them, read
their memory or their ledgers. /admin is always off: the grader controls them through these calls.
"""

from __future__ import annotations

import contextlib
from typing import Any

import fake_server

__all__ = ["ServerPool"]

# Settings the grader may not choose here: the address is always a free loopback port, /admin is
# always off, and a ledger file would be written where the candidate might read it.
_REFUSED = {"host", "port", "admin", "admin_token", "ledger"}


class ServerPool:
    """Named fake servers; each entry keeps the context manager that stops it."""

    def __init__(self) -> None:
        self._servers: dict[str, tuple[contextlib.ExitStack, fake_server.RunningServer]] = {}

    def serve(self, name: str, settings: dict[str, Any]) -> dict[str, str]:
        if not isinstance(name, str) or not name:
            raise ValueError("serve: name must be a non-empty string")
        if name in self._servers:
            raise ValueError(f"serve: a server named {name!r} is already running")
        if not isinstance(settings, dict):
            raise TypeError("serve: settings must be a mapping of fake_server settings")
        refused = sorted(_REFUSED & {str(k).replace("-", "_") for k in settings})
        if refused:
            raise ValueError(f"serve: setting {', '.join(refused)} is chosen by the sandbox, not the caller")
        stack = contextlib.ExitStack()
        running = stack.enter_context(fake_server.serve(**settings, host="127.0.0.1", port=0, admin=False))
        self._servers[name] = (stack, running)
        return {"base_url": running.openai_base_url, "url": running.base_url}

    def get(self, name: str) -> fake_server.RunningServer:
        try:
            return self._servers[name][1]
        except KeyError:
            known = ", ".join(sorted(self._servers)) or "none"
            raise ValueError(f"no server named {name!r} (running: {known})") from None

    def configure(self, name: str, settings: dict[str, Any]) -> None:
        if not isinstance(settings, dict):
            raise TypeError("configure: settings must be a mapping")
        self.get(name).configure(**settings)

    def set_faults(self, name: str, faults: list[dict[str, Any]]) -> None:
        if not isinstance(faults, list):
            raise TypeError("set_faults: faults must be a list of fault rules")
        self.get(name).set_faults(faults)

    def reset(self, name: str) -> None:
        self.get(name).reset()

    def ledger(self, name: str, settle: float) -> list[dict[str, Any]]:
        return self.get(name).ledger(settle)

    def finished(self, name: str) -> int:
        """How many requests the named server has finished since its last reset: a watched command's progress."""
        return sum(1 for record in self.get(name).ledger(0.0) if record.get("finished") is not None)

    def endpoint_calls(self, name: str, endpoint: str, since: float) -> list[dict[str, Any]]:
        """The named server's /health or /tokenize answers after Unix time `since`."""
        server = self.get(name)
        if endpoint == "health":
            return server.health_checks(since)
        if endpoint == "tokenize":
            return server.tokenize_calls(since)
        raise ValueError(f"endpoint_calls: no log of {endpoint!r} (health, tokenize)")

    def stop(self, name: str) -> None:
        self.get(name)
        stack, _ = self._servers.pop(name)
        stack.close()

    def close(self) -> None:
        for name in list(self._servers):
            with contextlib.suppress(Exception):
                self.stop(name)
