"""Who may reach `grader review`, and which of the round's files it may serve.

On loopback the app answers only requests addressed to it by its own host and port (a page elsewhere that
points a name of its own at 127.0.0.1 is refused: DNS rebinding), and a form posted from another origin is
refused. On any other address every request must carry the token printed at start: a link with `?token=`
sets an HttpOnly cookie and is redirected to the address without it, after which the cookie is enough;
without either the answer is a 401 page, never the content.

A file is served only from under the folder given to `grader review`: each part of the path is checked with
lstat (no symbolic link is followed, none is served), no part may start with a dot (`.blind-codes.json`,
`.partial/`, lock files), and the file is opened without following a link at its last step.
"""

from __future__ import annotations

import html
import ipaddress
import os
import secrets
import stat
from dataclasses import dataclass
from http.cookies import SimpleCookie
from pathlib import Path
from urllib.parse import parse_qsl, urlencode, urlsplit

from starlette.types import ASGIApp, Receive, Scope, Send

__all__ = ["COOKIE", "Gate", "NotServed", "is_loopback", "new_token", "read_served", "served_path"]

COOKIE = "grader_review"
MAX_FILE_BYTES = 64 * 1024 * 1024  # a report with its plots is a few MB


def is_loopback(host: str) -> bool:
    """Whether `host` (an address or `localhost`) is this machine's loopback."""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def new_token() -> str:
    return secrets.token_urlsafe(24)


def _page(status: int, title: str, text: str) -> bytes:
    return (
        f"<!DOCTYPE html>\n<html lang=en><head><meta charset=utf-8><title>{status} {html.escape(title)}</title></head>"
        f"<body><h1>{status} {html.escape(title)}</h1><p>{html.escape(text)}</p></body></html>\n"
    ).encode()


async def _answer(send: Send, status: int, body: bytes, headers: list[tuple[bytes, bytes]] | None = None) -> None:
    await send(
        {
            "type": "http.response.start",
            "status": status,
            "headers": [
                (b"content-type", b"text/html; charset=utf-8"),
                (b"content-length", str(len(body)).encode()),
                (b"cache-control", b"no-store"),
                *(headers or []),
            ],
        }
    )
    await send({"type": "http.response.body", "body": body})


@dataclass(frozen=True)
class Gate:
    """ASGI middleware in front of the app: the Host and Origin checks, and the token when there is one.

    `hosts`: the Host header values the app answers to (None: any, as on a non-loopback address with a token)."""

    app: ASGIApp
    token: str | None = None
    hosts: frozenset[str] | None = None

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope.get("headers", [])}
        host = headers.get("host", "")
        if self.hosts is not None and host.lower() not in self.hosts:
            await _answer(send, 403, _page(403, "Forbidden", f"This app answers to {min(self.hosts)} only."))
            return
        origin = headers.get("origin")
        if scope["method"] not in ("GET", "HEAD") and origin is not None and urlsplit(origin).netloc.lower() != host:
            await _answer(send, 403, _page(403, "Forbidden", "A form posted from another site is refused."))
            return
        if self.token is not None and not await self._let_in(scope, headers, send):
            return
        await self.app(scope, receive, send)

    async def _let_in(self, scope: Scope, headers: dict[str, str], send: Send) -> bool:
        """Whether the request carries the token; answers it (401, or the redirect that sets the cookie) if not."""
        assert self.token is not None
        query = parse_qsl(scope.get("query_string", b"").decode("latin-1"), keep_blank_values=True)
        given = [v for k, v in query if k == "token"]
        if given:
            if not secrets.compare_digest(given[-1].encode(), self.token.encode()):
                await _answer(send, 401, _page(401, "Unauthorized", "That token is not this review's."))
                return False
            rest = urlencode([(k, v) for k, v in query if k != "token"])
            location = scope.get("root_path", "") + scope["path"] + (f"?{rest}" if rest else "")
            cookie = f"{COOKIE}={self.token}; HttpOnly; SameSite=Strict; Path=/"
            await _answer(
                send,
                303,
                _page(303, "See Other", "Signed in."),
                [(b"location", location.encode("latin-1", "replace")), (b"set-cookie", cookie.encode())],
            )
            return False
        jar: SimpleCookie = SimpleCookie()
        try:
            jar.load(headers.get("cookie", ""))
        except Exception:  # noqa: BLE001 - a malformed Cookie header carries no token
            jar = SimpleCookie()
        morsel = jar.get(COOKIE)
        if morsel is not None and secrets.compare_digest(morsel.value.encode(), self.token.encode()):
            return True
        await _answer(
            send,
            401,
            _page(
                401, "Unauthorized", "Open the address `grader review` printed when it started (it carries ?token=)."
            ),
        )
        return False


class NotServed(Exception):
    """A file the app will not serve: `status` is 404 (no such file, or a name it never serves) or 403."""

    def __init__(self, status: int, why: str) -> None:
        super().__init__(why)
        self.status = status


def served_path(root: Path, relative: str) -> Path:
    """The regular file `relative` (a URL path, '/'-separated) names under `root` (resolved), checked part by
    part with lstat: nothing above root, no symbolic link, no dot-named part. NotServed otherwise."""
    if not relative or "\x00" in relative or "\\" in relative or relative.startswith("/"):
        raise NotServed(404, "no such file")
    parts = relative.split("/")
    if any(part in ("", ".", "..") or part.startswith(".") for part in parts):
        raise NotServed(404, "no such file")
    path = root
    for part in parts:
        path = path / part
        try:
            mode = os.lstat(path).st_mode
        except OSError:
            raise NotServed(404, "no such file") from None
        if stat.S_ISLNK(mode):
            raise NotServed(403, "a symbolic link is never followed")
    if not stat.S_ISREG(mode):
        raise NotServed(404, "not a file")
    if not path.resolve().is_relative_to(root):  # lstat saw no link; this says so again
        raise NotServed(403, "outside the round's folder")
    return path


def read_served(path: Path) -> bytes:
    """The bytes of a file `served_path` returned, opened without following a link swapped in since."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | getattr(os, "O_CLOEXEC", 0))
    except OSError:
        raise NotServed(404, "no such file") from None
    with os.fdopen(fd, "rb") as handle:
        info = os.fstat(handle.fileno())
        if not stat.S_ISREG(info.st_mode):
            raise NotServed(404, "not a file")
        if info.st_size > MAX_FILE_BYTES:
            raise NotServed(403, "larger than the app serves")
        return handle.read(MAX_FILE_BYTES + 1)
