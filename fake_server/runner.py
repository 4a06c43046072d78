"""Running fake servers: in a background thread of this process, or as a subprocess.

Both hand back a `RunningServer` with the base URL, the ledger and the run-time controls, so a
test (the kit's, the grader's or a candidate's) does not care which it got. In-process is cheaper
to start; a subprocess keeps the server's CPU work off the test's interpreter, which matters when
the test itself measures time.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import re
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import uvicorn
from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol

from .app import create_app
from .generation import Persona
from .scenarios import build_settings
from .settings import ServerSettings, SettingsError
from .state import ServerState

__all__ = ["RunningServer", "bind", "build_settings", "make_server", "new_loop", "serve", "serve_fleet", "serve_subprocess"]

_READY_TIMEOUT = 20.0


class _NoDelayHttp(HttpToolsProtocol):
    """uvicorn's HTTP protocol with Nagle's algorithm off on every accepted socket.

    Without it, on a kept-alive connection a small SSE frame can sit in the kernel for up to
    ~40 ms waiting for the peer's delayed ACK, which would make every timing figure a lie.
    """

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        sock = transport.get_extra_info("socket")
        if sock is not None and sock.family in (socket.AF_INET, socket.AF_INET6):
            with contextlib.suppress(OSError):
                sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        super().connection_made(transport)


def new_loop() -> asyncio.AbstractEventLoop:
    """The standard asyncio loop: its timers wake within ~1 ms of the deadline under a burst of
    writes, where uvloop's woke up to 7 ms late on every other step (measured in bench/README.md)."""
    return asyncio.new_event_loop()


def bind(host: str, port: int) -> socket.socket:
    """Bind and listen now, so the port is known (and connectable) before the server runs."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((host, port))
    except OSError as exc:
        sock.close()
        raise SettingsError(f"cannot listen on {host}:{port}: {exc.strerror}") from None
    sock.listen(4096)
    sock.setblocking(False)
    return sock


def make_server(settings: ServerSettings) -> tuple[uvicorn.Server, ServerState]:
    state = ServerState(settings)
    app = create_app(state, _persona_for(settings))
    config = uvicorn.Config(app, http=_NoDelayHttp, lifespan="on", log_level="warning", access_log=False,
                            timeout_keep_alive=60, backlog=4096, timeout_graceful_shutdown=5)
    return uvicorn.Server(config), state


def _persona_for(settings: ServerSettings) -> Persona | None:
    if settings.persona == "api":
        from .api_persona import ApiPersona
        return ApiPersona(settings)
    return None


class RunningServer:
    """A started fake server: where it is, what it recorded, and how to change it while it runs."""

    def __init__(self, base_url: str, state: ServerState | None = None, process: subprocess.Popen[bytes] | None = None,
                 admin_token: str | None = None) -> None:
        self.base_url = base_url  # e.g. http://127.0.0.1:41234 (the OpenAI base URL is base_url + "/v1")
        self.state = state
        self.process = process
        self.log_path: Path | None = None  # a subprocess's stdout and stderr
        self._admin_token = admin_token
        self._loop: asyncio.AbstractEventLoop | None = None

    @property
    def openai_base_url(self) -> str:
        return self.base_url + "/v1"

    @property
    def port(self) -> int:
        return int(self.base_url.rsplit(":", 1)[1])

    def ledger(self, settle: float = 5.0, *, generation: int | None = None) -> list[dict[str, Any]]:
        """Every finished request's record, oldest first (see fake_server.ledger), once the requests
        in flight have ended or `settle` seconds have passed. Only the current generation (since
        the last reset) unless `generation` names an earlier one."""
        if self.state is not None:
            return [r.to_dict() for r in self.state.ledger.records(settle, generation=generation)]
        query = f"/admin/ledger?settle={settle:g}" + ("" if generation is None else f"&generation={generation}")
        records: list[dict[str, Any]] = self._admin("GET", query)["records"]
        return records

    def configure(self, model: str | None = None, **values: Any) -> None:
        """Change engine settings at run time, e.g. `configure(max_num_seqs=2)`."""
        if self.state is not None:
            self._call(self.state.update_model, values, model)
        else:
            self._admin("PATCH", "/admin/config" + (f"?model={model}" if model else ""), values)

    def set_faults(self, rules: list[dict[str, Any]]) -> None:
        if self.state is not None:
            self._call(self.state.set_faults, rules)
        else:
            self._admin("PUT", "/admin/faults", {"faults": rules})

    def set_healthy(self, healthy: bool) -> None:
        if self.state is not None:
            self._call(setattr, self.state, "healthy", healthy)
        else:
            self._admin("POST", "/admin/health", {"healthy": healthy})

    def reset(self) -> None:
        if self.state is not None:
            self._call(self.state.reset)
        else:
            self._admin("POST", "/admin/reset")

    def log_text(self) -> str:
        """What a subprocess server has written to stdout and stderr so far ("" in-process)."""
        if self.log_path is None:
            return ""
        return self.log_path.read_text(encoding="utf-8", errors="replace")

    def metrics(self) -> str:
        return httpx.get(self.base_url + "/metrics", timeout=10).text

    def _call(self, fn: Any, *args: Any) -> Any:
        """Run `fn` on the server's loop (its state is not thread-safe) and return its result."""
        assert self._loop is not None

        async def run() -> Any:
            return fn(*args)
        return asyncio.run_coroutine_threadsafe(run(), self._loop).result(timeout=10)

    def _admin(self, method: str, path: str, body: Any = None) -> Any:
        headers = {"Authorization": f"Bearer {self._admin_token}"} if self._admin_token else {}
        response = httpx.request(method, self.base_url + path, json=body, headers=headers, timeout=30)
        if response.status_code >= 400:
            raise SettingsError(f"{method} {path}: {response.status_code} {response.text}")
        return response.json()


class _Host:
    """A background thread running one event loop that serves one or more fake servers."""

    def __init__(self, entries: list[ServerSettings]) -> None:
        self.socks: list[socket.socket] = []
        self.servers: list[tuple[uvicorn.Server, ServerState]] = []
        try:
            for settings in entries:
                self.socks.append(bind(settings.host, settings.port))
                self.servers.append(make_server(settings))
        except BaseException:
            for sock in self.socks:
                sock.close()
            raise
        self.loop = new_loop()
        self.failure: list[BaseException] = []
        self.thread = threading.Thread(target=self._run, name="fake-server", daemon=True)

    def _run(self) -> None:
        asyncio.set_event_loop(self.loop)

        async def all_servers() -> None:
            await asyncio.gather(*(server.serve(sockets=[sock]) for (server, _), sock in zip(self.servers, self.socks)))
        try:
            self.loop.run_until_complete(all_servers())
        except BaseException as exc:  # noqa: BLE001 - reported to the caller by start()
            self.failure.append(exc)
        finally:
            self.loop.close()

    def start(self) -> list[RunningServer]:
        self.thread.start()
        deadline = time.monotonic() + _READY_TIMEOUT
        while not all(server.started for server, _ in self.servers):
            if self.failure or not self.thread.is_alive() or time.monotonic() > deadline:
                self.stop()
                raise RuntimeError(f"fake server did not start: {self.failure[0] if self.failure else 'timed out'}")
            time.sleep(0.005)
        out = []
        for (_, state), sock in zip(self.servers, self.socks):
            host, port = sock.getsockname()[:2]
            running = RunningServer(f"http://{_url_host(host)}:{port}", state=state)
            running._loop = self.loop
            out.append(running)
        return out

    def stop(self) -> None:
        # End requests in flight first: uvicorn waits for open connections before it shuts down.
        if self.thread.is_alive() and not self.loop.is_closed():
            for _, state in self.servers:
                with contextlib.suppress(RuntimeError):
                    self.loop.call_soon_threadsafe(state.abort_all)
        for server, _ in self.servers:
            server.should_exit = True
        if self.thread.is_alive():
            self.thread.join(15)
        for sock in self.socks:
            sock.close()


@contextlib.contextmanager
def serve(settings: ServerSettings | None = None, *, scenario: str | Path | None = None,
          **overrides: Any) -> Iterator[RunningServer]:
    """Run a fake server in a background thread for the duration of the `with` block.

    >>> with serve(max_num_seqs=2, token_rate=200) as server:
    ...     client = openai.OpenAI(base_url=server.openai_base_url, api_key="unused")
    """
    if settings is None:
        settings = build_settings(scenario, **{"port": 0, **overrides})
    host = _Host([settings])
    (running,) = host.start()
    try:
        yield running
    finally:
        host.stop()


@contextlib.contextmanager
def serve_fleet(fleet: str | Path | dict[str, Any], *, any_port: bool = False) -> Iterator[dict[str, RunningServer]]:
    """Run every server of a fleet (a fleet file or its mapping) on one background loop.

    `any_port=True` ignores the file's ports and takes free ones (for tests).
    """
    from .fleet import fleet_settings

    named = fleet_settings(fleet)
    if any_port:
        for settings in named.values():
            settings.port = 0
    host = _Host(list(named.values()))
    servers = host.start()
    try:
        yield dict(zip(named, servers))
    finally:
        host.stop()


def _url_host(host: str) -> str:
    return f"[{host}]" if ":" in host else host


@contextlib.contextmanager
def serve_subprocess(*args: str, admin_token: str | None = None, env: dict[str, str] | None = None,
                     log: str | Path | None = None) -> Iterator[RunningServer]:
    """Run `fake-server serve ARGS --port 0 --admin` as a child process; yields once it answers.

    The child's stdout and stderr go to a file (`log`, kept; or a temporary one removed at the
    end), never to a pipe: a pipe nobody reads fills up after a few thousand warnings and then
    blocks the server. `RunningServer.log_text()` reads it.

    >>> with serve_subprocess("--scenario", "slot-saturation") as server: ...
    """
    cmd = [sys.executable, "-m", "fake_server", "serve", *args, "--port", "0", "--admin"]
    if admin_token:
        cmd += ["--admin-token", admin_token]
    if log is None:
        fd, name = tempfile.mkstemp(prefix="fake-server-", suffix=".log")
        os.close(fd)
        log_path, keep = Path(name), False
    else:
        log_path, keep = Path(log), True
    with open(log_path, "ab") as sink:
        proc = subprocess.Popen(cmd, stdout=sink, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                env={**os.environ, **(env or {})})
    try:
        base = _wait_for_url(proc, log_path)
        deadline = time.monotonic() + _READY_TIMEOUT
        while True:
            try:
                httpx.get(base + "/version", timeout=1)
                break
            except httpx.TransportError:
                if time.monotonic() > deadline or proc.poll() is not None:
                    raise RuntimeError("fake server subprocess never answered") from None
                time.sleep(0.02)
        running = RunningServer(base, process=proc, admin_token=admin_token)
        running.log_path = log_path
        yield running
    finally:
        proc.terminate()
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        if not keep:
            log_path.unlink(missing_ok=True)


def _wait_for_url(proc: subprocess.Popen[bytes], log_path: Path) -> str:
    """The base URL the child prints on its first line, or a RuntimeError with what it said instead."""
    deadline = time.monotonic() + _READY_TIMEOUT
    while True:
        text = log_path.read_text(encoding="utf-8", errors="replace")
        match = re.search(r"serving .* on (http://\S+)", text)
        if match is not None:
            return match.group(1)
        if proc.poll() is not None or time.monotonic() > deadline:
            if proc.poll() is None:
                proc.kill()
            said = " ".join(log_path.read_text(encoding="utf-8", errors="replace").split())[:2000]
            raise RuntimeError(f"fake server did not start: {said or 'no output'}")
        time.sleep(0.01)


def ledger_lines(path: str | Path) -> list[dict[str, Any]]:
    """Read a JSONL ledger file written with `--ledger`."""
    return [json.loads(line) for line in Path(path).read_text().splitlines() if line.strip()]
