"""The harness's operations as method calls: what the grader asks of a sandbox (start a fake server,
run a candidate command, send a request from inside), each one request on the harness's pipe.

`Sandbox` (box.py) owns the namespace's life and the pipe; this class owns what is said over it and how
long each answer may take. A live exercise run by hand (grader/live/hand_box.py) offers the same calls
on this machine's loopback.
"""

from __future__ import annotations

from typing import Any

from .protocol import RunResult

__all__ = ["OP_MARGIN_S", "HarnessOperations"]

OP_MARGIN_S = 30.0  # what an operation may take beyond its own timeout (the harness's answer, a busy machine)


class HarnessOperations:
    """Each operation the harness serves (grader/sandbox/harness.py), as a call."""

    def _request(self, op: str, args: dict[str, Any], *, timeout_s: float, closing: bool = False) -> Any:
        """Send one operation and return its answer; the sandbox that owns the pipe implements it."""
        raise NotImplementedError

    def serve(self, name: str, **settings: Any) -> dict[str, str]:
        """Start a fake server named `name` inside; returns {"base_url": .../v1, "url": ...}."""
        urls: dict[str, str] = self._request("serve", {"name": name, "settings": settings}, timeout_s=OP_MARGIN_S)
        return urls

    def configure(self, name: str, **settings: Any) -> None:
        self._request("configure", {"name": name, "settings": settings}, timeout_s=OP_MARGIN_S)

    def set_faults(self, name: str, faults: list[dict[str, Any]]) -> None:
        self._request("set_faults", {"name": name, "faults": faults}, timeout_s=OP_MARGIN_S)

    def reset(self, name: str) -> None:
        self._request("reset", {"name": name}, timeout_s=OP_MARGIN_S)

    def stop_server(self, name: str) -> None:
        self._request("stop_server", {"name": name}, timeout_s=OP_MARGIN_S)

    def ledger(self, name: str, settle: float = 2.0) -> list[dict[str, Any]]:
        """The named server's ledger records (fake_server.engine.ledger), once in-flight requests settle."""
        records: list[dict[str, Any]] = self._request(
            "ledger", {"name": name, "settle": settle}, timeout_s=settle + OP_MARGIN_S
        )["records"]
        return records

    def endpoint_calls(self, name: str, endpoint: str, since: float = 0.0) -> list[dict[str, Any]]:
        """The named server's /health or /tokenize (`endpoint`) answers after Unix time `since` ({"at",
        "status"}, oldest first)."""
        calls: list[dict[str, Any]] = self._request(
            "endpoint_calls", {"name": name, "endpoint": endpoint, "since": since}, timeout_s=OP_MARGIN_S
        )["calls"]
        return calls

    def hold_port(self, port: int) -> None:
        """Make a loopback port inside take no connection: every connect to it hangs until its client gives up
        (a stopped server's port, for a connect timeout)."""
        self._request("hold_port", {"port": port}, timeout_s=OP_MARGIN_S)

    def run(
        self,
        argv: list[str],
        *,
        timeout_s: float,
        env: dict[str, str] | None = None,
        inject: dict[str, str] | None = None,
        files_back: tuple[str, ...] | list[str] = (),
        cwd: str = "work",
        watch: dict[str, Any] | None = None,
    ) -> RunResult:
        """Run a candidate command to its end; every process it started is gone when this returns. `watch`
        ({"server", "quiet_s", "max_s"}) lets it run past `timeout_s` while that fake server finishes requests
        (grader.sandbox.jobs.Watch)."""
        args = _command(argv, timeout_s, env, inject, files_back, cwd)
        most = timeout_s
        if watch is not None:
            args["watch"] = watch
            most = max(timeout_s, float(watch.get("max_s", timeout_s)))
        return RunResult.from_dict(self._request("run", args, timeout_s=most + 2 * OP_MARGIN_S))

    def spawn(
        self,
        argv: list[str],
        *,
        timeout_s: float = 600.0,
        env: dict[str, str] | None = None,
        inject: dict[str, str] | None = None,
        files_back: tuple[str, ...] | list[str] = (),
        cwd: str = "work",
    ) -> str:
        """Start a long-running candidate command (a gateway); returns its handle for stop().

        It is killed at `timeout_s` if not stopped before; `files_back` are read when it stops.
        """
        args = _command(argv, timeout_s, env, inject, files_back, cwd)
        handle: str = self._request("spawn", args, timeout_s=OP_MARGIN_S)["handle"]
        return handle

    def stop(self, handle: str) -> RunResult:
        """Stop a spawned command (SIGTERM, then SIGKILL) and everything it started."""
        return RunResult.from_dict(self._request("stop", {"handle": handle}, timeout_s=2 * OP_MARGIN_S))

    def http_many(self, requests: list[dict[str, Any]], *, timeout_s: float = 30.0) -> list[dict[str, Any]]:
        """Several requests sent at once from inside the namespace; answers in the same order."""
        answers: list[dict[str, Any]] = self._request(
            "http_many", {"requests": requests, "timeout_s": timeout_s}, timeout_s=2 * timeout_s + OP_MARGIN_S
        )
        return answers

    def write_file(self, name: str, text: str) -> str:
        """Write a file the grader chose (a gateway's config) into the work folder; returns its path inside."""
        path: str = self._request("write_file", {"name": name, "text": text}, timeout_s=OP_MARGIN_S)["path"]
        return path

    def wait_port(self, port: int, timeout_s: float = 10.0, *, handle: str | None = None) -> bool:
        """Wait until something listens on a loopback port inside; with the `handle` of the spawned command
        that is to listen, no longer than it lives."""
        args: dict[str, Any] = {"port": port, "timeout_s": timeout_s}
        if handle is not None:
            args["handle"] = handle
        return bool(self._request("wait_port", args, timeout_s=timeout_s + OP_MARGIN_S)["open"])

    def http(
        self,
        method: str,
        url: str,
        *,
        headers: dict[str, str] | None = None,
        json: Any = None,
        stream: bool = False,
        timeout_s: float = 30.0,
    ) -> dict[str, Any]:
        """Send a request from inside the namespace to a loopback URL (a candidate's gateway)."""
        args = {
            "method": method,
            "url": url,
            "headers": headers or {},
            "json": json,
            "stream": stream,
            "timeout_s": timeout_s,
        }
        answer: dict[str, Any] = self._request("http", args, timeout_s=2 * timeout_s + OP_MARGIN_S)
        return answer


def _command(
    argv: list[str],
    timeout_s: float,
    env: dict[str, str] | None,
    inject: dict[str, str] | None,
    files_back: tuple[str, ...] | list[str],
    cwd: str,
) -> dict[str, Any]:
    """A candidate command as the harness reads it (`run` and `spawn` alike)."""
    return {
        "argv": list(argv),
        "timeout_s": timeout_s,
        "env": env or {},
        "inject": inject or {},
        "files_back": list(files_back),
        "cwd": cwd,
    }
