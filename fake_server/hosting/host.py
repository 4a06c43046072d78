"""Hosts: where a fake server runs. A background thread of this process, or a child process.

A host starts servers, waits until they answer, and stops them; what a server is and how it is
driven live elsewhere (server.py, http/control.py, handle.py).
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import re
import socket
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import httpx
import uvicorn

from fake_server.hosting.server import bind, loopback_tls, make_server, new_loop, url_for
from fake_server.http.control import ServerControl
from fake_server.settings import ServerSettings

__all__ = ["ProcessHost", "ThreadHost"]

READY_TIMEOUT = 20.0  # seconds a server may take to answer after it was started


class ThreadHost:
    """A background thread running one event loop that serves one or more fake servers."""

    def __init__(self, entries: list[ServerSettings]) -> None:
        self.socks: list[socket.socket] = []
        self.servers: list[tuple[uvicorn.Server, ServerControl]] = []
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

    def start(self) -> list[tuple[str, ServerControl]]:
        """Start the thread; once every server listens, their base URLs and controls, in order."""
        self.thread.start()
        deadline = time.monotonic() + READY_TIMEOUT
        while not all(server.started for server, _ in self.servers):
            if self.failure or not self.thread.is_alive() or time.monotonic() > deadline:
                self.stop()
                raise RuntimeError(f"fake server did not start: {self.failure[0] if self.failure else 'timed out'}")
            time.sleep(0.005)
        return [(url_for(sock), control) for (_, control), sock in zip(self.servers, self.socks)]

    def stop(self) -> None:
        # End requests in flight first: uvicorn waits for open connections before it shuts down.
        if self.thread.is_alive() and not self.loop.is_closed():
            for _, control in self.servers:
                with contextlib.suppress(RuntimeError):
                    self.loop.call_soon_threadsafe(control.state.abort_all)
        for server, _ in self.servers:
            server.should_exit = True
        if self.thread.is_alive():
            self.thread.join(15)
        for sock in self.socks:
            sock.close()


class ProcessHost:
    """`fake-server serve ARGS --port 0 --admin` as a child process.

    The child's stdout and stderr go to a file (`log`, kept; or a temporary one removed at the
    end), never to a pipe: a pipe nobody reads fills up after a few thousand warnings and then
    blocks the server.
    """

    def __init__(
        self,
        args: tuple[str, ...],
        *,
        admin_token: str | None = None,
        env: dict[str, str] | None = None,
        log: str | Path | None = None,
    ) -> None:
        self.cmd = [sys.executable, "-m", "fake_server", "serve", *args, "--port", "0", "--admin"]
        if admin_token:
            self.cmd += ["--admin-token", admin_token]
        self.env = {**os.environ, **(env or {})}
        if log is None:
            fd, name = tempfile.mkstemp(prefix="fake-server-", suffix=".log")
            os.close(fd)
            self.log_path, self._keep_log = Path(name), False
        else:
            self.log_path, self._keep_log = Path(log), True
        self.process: subprocess.Popen[bytes] | None = None

    def start(self) -> str:
        """Start the child; its base URL once it answers, or a RuntimeError with what it said instead."""
        with open(self.log_path, "ab") as sink:
            self.process = subprocess.Popen(
                self.cmd, stdout=sink, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, env=self.env
            )
        base = self._announced_url(self.process)
        deadline = time.monotonic() + READY_TIMEOUT
        while True:
            try:
                httpx.get(base + "/version", timeout=1, trust_env=False, verify=loopback_tls())
                return base
            except httpx.TransportError:
                if time.monotonic() > deadline or self.process.poll() is not None:
                    raise RuntimeError("fake server subprocess never answered") from None
                time.sleep(0.02)

    def stop(self) -> None:
        if self.process is not None:
            self.process.terminate()
            try:
                self.process.wait(10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        if not self._keep_log:
            self.log_path.unlink(missing_ok=True)

    def _announced_url(self, proc: subprocess.Popen[bytes]) -> str:
        """The base URL the child prints on its first line."""
        deadline = time.monotonic() + READY_TIMEOUT
        while True:
            text = self.log_path.read_text(encoding="utf-8", errors="replace")
            match = re.search(r"serving .* on (http://\S+)", text)
            if match is not None:
                return match.group(1)
            if proc.poll() is not None or time.monotonic() > deadline:
                if proc.poll() is None:
                    proc.kill()
                said = " ".join(self.log_path.read_text(encoding="utf-8", errors="replace").split())[:2000]
                raise RuntimeError(f"fake server did not start: {said or 'no output'}")
            time.sleep(0.01)
