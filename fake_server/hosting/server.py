"""One fake server as a uvicorn server: the socket it listens on, the HTTP protocol, the app.

Hosts (a thread of this process or the CLI's own process) run what `make_server` returns on a
socket from `bind`; neither knows how the other is hosted.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import socket
import ssl

import httpx
import uvicorn
from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol

from fake_server.engine.state import ServerState
from fake_server.http.app import create_app
from fake_server.http.control import ServerControl
from fake_server.http.generation import Persona
from fake_server.settings import ServerSettings, SettingsError

__all__ = ["bind", "loopback_tls", "make_server", "new_loop", "url_for"]


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


@functools.cache
def loopback_tls() -> ssl.SSLContext:
    """The TLS context every client of a fake server shares. A fake server speaks plain HTTP, so it never
    secures a connection; but httpx builds one per client unless given one, loading the CA bundle each
    time: about 18 ms of CPU, more than the request it is built for."""
    return httpx.create_ssl_context()


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


def url_for(sock: socket.socket) -> str:
    """The base URL of a bound socket, e.g. http://127.0.0.1:41234 (IPv6 hosts in brackets)."""
    host, port = sock.getsockname()[:2]
    return f"http://[{host}]:{port}" if ":" in host else f"http://{host}:{port}"


def make_server(settings: ServerSettings) -> tuple[uvicorn.Server, ServerControl]:
    """The uvicorn server of one fake server (not started yet), and the controls of what it serves."""
    control = ServerControl(ServerState(settings))
    app = create_app(control, _persona_for(settings))
    config = uvicorn.Config(
        app,
        http=_NoDelayHttp,
        lifespan="on",
        log_level="warning",
        access_log=False,
        timeout_keep_alive=60,
        backlog=4096,
        timeout_graceful_shutdown=5,
    )
    return uvicorn.Server(config), control


def _persona_for(settings: ServerSettings) -> Persona | None:
    if settings.persona == "api":
        from fake_server.http.api_persona import ApiPersona

        return ApiPersona(settings)
    return None
