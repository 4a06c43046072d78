"""`RunningServer`: a started fake server, driven through one interface wherever it runs.

Every control goes through a `Controls`: `LocalControls` calls the server's `ServerControl` on its
event loop (a server in this process); `AdminControls` calls the same `ServerControl` over
`/admin/*` (a server in another process). `RunningServer` has one implementation of each control
on top of either, so the kit's tests of it cover both paths.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from pathlib import Path
from typing import Any, Protocol, TypeVar

import httpx

from fake_server.engine.state import ServerState
from fake_server.hosting.server import loopback_tls
from fake_server.http.control import ServerControl
from fake_server.settings import SettingsError

__all__ = ["AdminControls", "Controls", "LocalControls", "RunningServer"]

_T = TypeVar("_T")
_CALL_TIMEOUT = 30.0  # seconds for one control call; a ledger read adds its settle time


class Controls(Protocol):
    """What `ServerControl` offers, callable from any thread of the caller."""

    def config(self) -> dict[str, Any]: ...
    def configure(self, values: dict[str, Any], *, model: str | None = None) -> dict[str, Any]: ...
    def set_faults(self, rules: list[dict[str, Any]]) -> list[dict[str, Any]]: ...
    def set_healthy(self, healthy: bool) -> bool: ...
    def reset(self) -> None: ...
    def ledger(self, *, settle: float, generation: int | None) -> dict[str, Any]: ...
    def endpoint_calls(self, endpoint: str, *, since: float) -> list[dict[str, Any]]: ...


class LocalControls:
    """A `ServerControl` of this process, called on the event loop that runs its server."""

    def __init__(self, control: ServerControl, loop: asyncio.AbstractEventLoop) -> None:
        self.control = control
        self._loop = loop

    def config(self) -> dict[str, Any]:
        return self._on_loop(self.control.config)

    def configure(self, values: dict[str, Any], *, model: str | None = None) -> dict[str, Any]:
        return self._on_loop(lambda: self.control.configure(values, model=model))

    def set_faults(self, rules: list[dict[str, Any]]) -> list[dict[str, Any]]:
        return self._on_loop(lambda: self.control.set_faults(rules))

    def set_healthy(self, healthy: bool) -> bool:
        return self._on_loop(lambda: self.control.set_healthy(healthy))

    def reset(self) -> None:
        self._on_loop(self.control.reset)

    def endpoint_calls(self, endpoint: str, *, since: float) -> list[dict[str, Any]]:
        return self._on_loop(lambda: self.control.endpoint_calls(endpoint, since=since))

    def ledger(self, *, settle: float, generation: int | None) -> dict[str, Any]:
        # The ledger locks, so this one runs here: it blocks this thread, not the server's loop, and
        # still reads a stopped server's records.
        return self.control.ledger(settle=settle, generation=generation)

    def _on_loop(self, fn: Callable[[], _T]) -> _T:
        async def run() -> _T:
            return fn()

        return asyncio.run_coroutine_threadsafe(run(), self._loop).result(timeout=_CALL_TIMEOUT)


class AdminControls:
    """The `/admin/*` API of a server anywhere, as `Controls`; a 4xx becomes a `SettingsError`."""

    def __init__(self, base_url: str, *, token: str | None = None) -> None:
        self.base_url = base_url
        self._headers = {"Authorization": f"Bearer {token}"} if token else {}

    def config(self) -> dict[str, Any]:
        config: dict[str, Any] = self._call("GET", "/admin/config")
        return config

    def configure(self, values: dict[str, Any], *, model: str | None = None) -> dict[str, Any]:
        config: dict[str, Any] = self._call(
            "PATCH", "/admin/config", values, params={"model": model} if model else None
        )
        return config

    def set_faults(self, rules: list[dict[str, Any]]) -> list[dict[str, Any]]:
        faults: list[dict[str, Any]] = self._call("PUT", "/admin/faults", {"faults": rules})["faults"]
        return faults

    def set_healthy(self, healthy: bool) -> bool:
        return bool(self._call("POST", "/admin/health", {"healthy": healthy})["healthy"])

    def reset(self) -> None:
        self._call("POST", "/admin/reset")

    def endpoint_calls(self, endpoint: str, *, since: float) -> list[dict[str, Any]]:
        calls: list[dict[str, Any]] = self._call("GET", f"/admin/calls/{endpoint}", params={"since": repr(since)})[
            "calls"
        ]
        return calls

    def ledger(self, *, settle: float, generation: int | None) -> dict[str, Any]:
        params: dict[str, Any] = {"settle": f"{settle:g}"}
        if generation is not None:
            params["generation"] = generation
        answer: dict[str, Any] = self._call("GET", "/admin/ledger", params=params, timeout=_CALL_TIMEOUT + settle)
        return answer

    def _call(
        self,
        method: str,
        path: str,
        body: Any = None,
        *,
        params: dict[str, Any] | None = None,
        timeout: float = _CALL_TIMEOUT,
    ) -> Any:
        response = httpx.request(
            method,
            self.base_url + path,
            json=body,
            params=params,
            headers=self._headers,
            timeout=timeout,
            trust_env=False,
            verify=loopback_tls(),
        )
        if response.status_code >= 400:
            raise SettingsError(f"{method} {path}: {response.status_code} {_message(response)}")
        return response.json()


def _message(response: httpx.Response) -> str:
    """The OpenAI-style error message of an admin answer, else its text."""
    try:
        return str(response.json()["error"]["message"])
    except (ValueError, KeyError, TypeError):
        return response.text


class RunningServer:
    """A started fake server: where it is, what it recorded, and how to change it while it runs."""

    def __init__(
        self,
        base_url: str,
        controls: Controls,
        *,
        state: ServerState | None = None,
        process: Any = None,
        log_path: Path | None = None,
    ) -> None:
        self.base_url = base_url  # e.g. http://127.0.0.1:41234 (the OpenAI base URL is base_url + "/v1")
        self.controls = controls
        self.state = state  # in-process only: the live state, for tests that must look inside
        self.process = process  # a subprocess server's subprocess.Popen
        self.log_path = log_path  # a subprocess's stdout and stderr

    @property
    def openai_base_url(self) -> str:
        """The base URL an OpenAI client takes: base_url + "/v1"."""
        return self.base_url + "/v1"

    @property
    def port(self) -> int:
        """The port the server listens on."""
        return int(self.base_url.rsplit(":", 1)[1])

    def ledger(self, settle: float = 5.0, *, generation: int | None = None) -> list[dict[str, Any]]:
        """Every finished request's record, oldest first (see fake_server.engine.ledger), once the requests
        in flight have ended or `settle` seconds have passed. Only the current generation (since
        the last reset) unless `generation` names an earlier one."""
        records: list[dict[str, Any]] = self.controls.ledger(settle=settle, generation=generation)["records"]
        return records

    def settings(self, model: str | None = None) -> dict[str, Any]:
        """The engine settings a model (default: the first served) runs with now, e.g. `settings()["max_num_seqs"]`.

        What was asked, unless `FAKE_SERVER_DRAW` drew other slots and token rate (fake_server/server_draw.py):
        a test whose expectations follow from them reads them here."""
        models: dict[str, dict[str, Any]] = self.controls.config()["models"]
        name = model if model is not None else next(iter(models))
        if name not in models:
            raise SettingsError(f"no model named `{name}` (served: {', '.join(models)})")
        return models[name]

    def configure(self, model: str | None = None, **values: Any) -> None:
        """Change engine settings at run time, e.g. `configure(max_num_seqs=2)`."""
        self.controls.configure(values, model=model)

    def set_faults(self, rules: list[dict[str, Any]]) -> None:
        """Replace every fault rule (`fake-server faults` lists them); [] clears them."""
        self.controls.set_faults(rules)

    def set_healthy(self, healthy: bool) -> None:
        """Make /health answer 200 (True) or 503 (False)."""
        self.controls.set_healthy(healthy)

    def reset(self) -> None:
        """Back to the start-up settings, faults and health, with a new ledger generation."""
        self.controls.reset()

    def health_checks(self, since: float = 0.0) -> list[dict[str, Any]]:
        """The /health answers given after Unix time `since`, oldest first ({"at", "status"}): when a
        client's health probe saw this server, and what it was told."""
        return self.controls.endpoint_calls("health", since=since)

    def tokenize_calls(self, since: float = 0.0) -> list[dict[str, Any]]:
        """The /tokenize answers given after Unix time `since`, oldest first ({"at", "status"}): whether a
        client counted its prompt on this server, and what it was told."""
        return self.controls.endpoint_calls("tokenize", since=since)

    def log_text(self) -> str:
        """What a subprocess server has written to stdout and stderr so far ("" in-process)."""
        if self.log_path is None:
            return ""
        return self.log_path.read_text(encoding="utf-8", errors="replace")

    def metrics(self) -> str:
        """The /metrics text, vLLM's names."""
        return httpx.get(self.base_url + "/metrics", timeout=10, trust_env=False, verify=loopback_tls()).text
