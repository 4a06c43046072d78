"""Requests the grader sends from inside the sandbox's network namespace (loopback only).

A candidate's gateway listens on loopback inside the namespace, where the outer grader cannot
reach it; the harness sends the grader's requests for it and reports what came back, with the
receive time of every server-sent event (Unix epoch seconds, the ledger's clock).
"""

from __future__ import annotations

import contextlib
import functools
import socket
import ssl
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import httpx

__all__ = ["LOOPBACK_HOSTS", "HeldPort", "http_many", "http_request", "wait_port"]

LOOPBACK_HOSTS = {"127.0.0.1", "localhost", "::1"}
_BODY_CAP = 8 * 1024 * 1024


def _loopback_url(url: Any) -> httpx.URL:
    if not isinstance(url, str):
        raise TypeError("http: url must be a string")
    try:
        parsed = httpx.URL(url)
    except Exception as exc:  # noqa: BLE001 - httpx raises several types for bad URLs
        raise ValueError(f"http: {url!r} is not a URL ({exc})") from None
    if parsed.scheme not in ("http", "https"):
        raise ValueError(f"http: {url!r} is not an http URL")
    if parsed.host not in LOOPBACK_HOSTS:
        raise ValueError(f"http: {url!r} is not a loopback address (only 127.0.0.1, localhost and ::1)")
    return parsed


def http_request(
    method: str,
    url: str,
    *,
    headers: dict[str, str] | None = None,
    json: Any = None,
    stream: bool = False,
    timeout_s: float = 30.0,
) -> dict[str, Any]:
    """Send one request and report status, headers, body and (for SSE) each event with its time.

    Transport failures are answered, not raised: `error` names them and `status` is None.
    """
    target = _loopback_url(url)
    if not isinstance(method, str) or not method.isalpha():
        raise ValueError(f"http: {method!r} is not an HTTP method")
    out: dict[str, Any] = {"status": None, "headers": {}, "body": "", "events": [], "error": None}
    out["sent_at"] = time.time()
    deadline = time.monotonic() + timeout_s
    body = bytearray()
    try:
        with (
            httpx.Client(timeout=timeout_s, trust_env=False, verify=_tls()) as client,
            client.stream(method.upper(), target, headers=headers or {}, json=json) as response,
        ):
            out["status"] = response.status_code
            out["headers"] = dict(response.headers)
            if stream:
                _read_events(response, out, body, deadline)
            else:
                for chunk in response.iter_bytes():
                    body += chunk[: max(0, _BODY_CAP - len(body))]
                    if time.monotonic() > deadline:
                        out["error"] = f"timed out after {timeout_s:g}s reading the body"
                        break
    except httpx.HTTPError as exc:
        out["error"] = f"{type(exc).__name__}: {exc}"
    out["body"] = body.decode("utf-8", "replace")
    out["done_at"] = time.time()
    return out


def _read_events(response: httpx.Response, out: dict[str, Any], body: bytearray, deadline: float) -> None:
    """SSE as the HTML standard reads it, and so as a client sees the gateway's stream: lines end with
    CRLF, LF or CR (httpx splits them, across reads too); `data:` lines of one event are joined by
    newlines; comments and other fields are skipped; a blank line ends the event. An event the
    stream leaves unfinished is not dispatched (its bytes stay in `body`), as a client drops it."""
    data: list[str] = []
    for line in response.iter_lines():
        now = time.time()
        if len(body) < _BODY_CAP:
            body += (line + "\n").encode()
        if line.startswith("data:") or line == "data":
            data.append(line[5:].removeprefix(" "))
        elif line == "" and data:
            out["events"].append([now, "\n".join(data)])
            data = []
        if time.monotonic() > deadline:
            out["error"] = "timed out reading the event stream"
            return


@functools.cache
def _tls() -> ssl.SSLContext:
    """One TLS context for every request. Requests go to loopback over plain HTTP, so it secures nothing;
    but httpx builds one per client unless given one, loading the CA bundle each time (about 18 ms of
    CPU), and a gateway section sends hundreds: it was half the harness's CPU."""
    return httpx.create_ssl_context()


def http_many(requests: Any, *, timeout_s: float = 30.0) -> list[dict[str, Any]]:
    """Send several requests at once (one thread each, at most 64) and report each as `http_request` does.

    Each request is {"method", "url", "headers", "json", "stream"}; the answers come back in the same order.
    """
    if not isinstance(requests, list) or not all(isinstance(r, dict) for r in requests):
        raise TypeError("http_many: requests must be a list of request objects")
    if not 0 < len(requests) <= 64:
        raise ValueError(f"http_many: between 1 and 64 requests (got {len(requests)})")
    for r in requests:
        _loopback_url(r.get("url"))

    def one(r: dict[str, Any]) -> dict[str, Any]:
        return http_request(
            r.get("method", "GET"),
            r["url"],
            headers=r.get("headers"),
            json=r.get("json"),
            stream=bool(r.get("stream")),
            timeout_s=timeout_s,
        )

    with ThreadPoolExecutor(max_workers=len(requests)) as pool:
        return list(pool.map(one, requests))


class HeldPort:
    """A loopback port that takes no connection: a listener whose one-place accept queue is already full.

    The kernel then drops every new SYN on it (the queue has no room), so a client's connect neither
    succeeds nor is refused: it hangs until the client's own connect timeout, as a host that has gone
    silent does. A refused connection, by contrast, is what a stopped server gives.
    """

    def __init__(self, port: int) -> None:
        if isinstance(port, bool) or not isinstance(port, int) or not 0 < port < 65536:
            raise ValueError(f"hold_port: {port!r} is not a port number")
        self.port = port
        self._listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self._listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self._listener.bind(("127.0.0.1", port))
        self._listener.listen(0)  # room for one connection waiting to be accepted, and none is ever accepted
        self._filler = socket.create_connection(("127.0.0.1", port), timeout=2.0)

    def close(self) -> None:
        for sock in (self._filler, self._listener):
            with contextlib.suppress(OSError):
                sock.close()


def wait_port(port: int, timeout_s: float, gone: Callable[[], bool] | None = None) -> dict[str, Any]:
    """Wait until something accepts connections on 127.0.0.1:port; or, with `gone`, until the command
    that was to listen there has ended with nothing of it left, when waiting longer cannot help
    (`exited` in the answer)."""
    if isinstance(port, bool) or not isinstance(port, int) or not 0 < port < 65536:
        raise ValueError(f"wait_port: {port!r} is not a port number")
    start = time.monotonic()
    while True:
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.5):
                return {"open": True, "waited_s": round(time.monotonic() - start, 3)}
        except OSError:
            waited = round(time.monotonic() - start, 3)
            if gone is not None and gone():
                return {"open": False, "waited_s": waited, "exited": True}
            if waited > timeout_s:
                return {"open": False, "waited_s": waited}
            time.sleep(0.02)
