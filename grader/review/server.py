"""Serving the review app: a socket bound first (so a port in use is one line, and port 0 prints the port it
got), then uvicorn on it, in the foreground for `grader review` or in a thread for the tests.

On loopback the app answers to its own address only; anywhere else it asks for a token, drawn here from
`secrets` and printed once, in the address to open.
"""

from __future__ import annotations

import getpass
import socket
import threading
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import uvicorn

from grader.review.access import is_loopback, new_token
from grader.review.app import build_app
from grader.review.round_view import ReviewError, open_round

__all__ = ["Running", "Served", "default_reviewer", "prepare", "serve", "start"]


def default_reviewer() -> str:
    try:
        return getpass.getuser()
    except (KeyError, OSError):
        return "reviewer"


@dataclass
class Served:
    """A bound socket and the app to serve on it, with the address a browser opens."""

    sock: socket.socket
    app: object
    url: str  # with ?token= when the app asks for one
    token: str | None


def _listen(host: str, port: int) -> socket.socket:
    family = socket.AF_INET6 if ":" in host.strip("[]") else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind((host.strip("[]"), port))
        sock.listen(128)
    except OSError as exc:
        sock.close()
        raise ReviewError(f"{host}:{port}: cannot listen there ({exc.strerror or exc})") from None
    sock.set_inheritable(True)
    return sock


def prepare(
    round_dir: Path,
    *,
    host: str = "127.0.0.1",
    port: int = 0,
    blind: bool = False,
    reviewer: str | None = None,
    submissions: Path | None = None,
) -> Served:
    """Open the round and bind the socket; ReviewError (one line) when either cannot be done."""
    review = open_round(round_dir, blind=blind, submissions=submissions)
    sock = _listen(host, port)
    bound = sock.getsockname()[1]
    name = host.strip("[]")
    shown = f"[{name}]" if ":" in name else name
    if is_loopback(name):
        token = None
        hosts = frozenset(f"{h}:{bound}" for h in ("127.0.0.1", "localhost", "[::1]", shown.lower()))
    else:
        token, hosts = new_token(), None
        if name in ("0.0.0.0", "::"):
            shown = socket.gethostname()
    app = build_app(review, reviewer=reviewer or default_reviewer(), token=token, hosts=hosts)
    url = f"http://{shown}:{bound}/" + (f"?token={token}" if token else "")
    return Served(sock, app, url, token)


def _server(served: Served) -> uvicorn.Server:
    config = uvicorn.Config(served.app, log_level="warning", lifespan="off", access_log=False)  # type: ignore[arg-type]
    return uvicorn.Server(config)


def serve(served: Served, echo: Callable[[str], None] = print) -> None:
    """Serve until interrupted (Ctrl-C)."""
    echo(f"grader review: open {served.url}")
    if served.token:
        echo("the address carries this review's token: give it only to its reviewers")
    echo("Ctrl-C stops it")
    _server(served).run(sockets=[served.sock])


@dataclass
class Running:
    url: str
    server: uvicorn.Server
    thread: threading.Thread

    def stop(self) -> None:
        self.server.should_exit = True
        self.thread.join(15)


def start(served: Served, wait_s: float = 15.0) -> Running:
    """Serve in a thread (the tests' way) and return once it answers."""
    server = _server(served)
    thread = threading.Thread(target=server.run, kwargs={"sockets": [served.sock]}, daemon=True, name="review")
    thread.start()
    started = threading.Event()
    for _ in range(int(wait_s / 0.02)):
        if server.started:
            started.set()
            break
        if not thread.is_alive():
            break
        started.wait(0.02)
    if not started.is_set():
        server.should_exit = True
        raise ReviewError(f"{served.url}: the app did not start within {wait_s:g} s")
    return Running(served.url, server, thread)
