"""One streamed chat completion over HTTP, timed from the moment it is sent, into a RequestResult.

The clock starts when httpx starts writing the request to the connection (its documented `trace`
extension reports that moment), so the wait for a concurrency slot, the wait for a connection and
the TCP connect are never in TTFT, and neither is this process's own work before the bytes go
out. If a transport never reports it, the clock starts just before the request is handed to httpx.

HTTP and transport failures map to the contract's reasons: a status other than 200 is
`http_status`; a connect error or a connection closed mid-body is `connection`; a connect, read or
whole-request timeout is `timeout`; a body that ends cleanly without `[DONE]` is `no_done`; the
stream's own failures (`stream_error`, `malformed`) come from StreamTracker.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import time
from collections.abc import AsyncIterator
from typing import Any

import httpx

from .results import RequestResult
from .sse import SSEDecoder
from .stream import StreamTracker

__all__ = ["send_one", "Clock"]

_ERROR_BODY_LIMIT = 4096  # bytes of a non-200 body kept for the message
_DRAIN_S = 0.5  # after [DONE], how long to wait for the body's end so the connection can be reused


class Clock:
    """perf_counter for durations, anchored once to time.time() so every epoch in a run agrees."""

    def __init__(self) -> None:
        self._wall = time.time()
        self._perf = time.perf_counter()

    def epoch(self, perf: float) -> float:
        return self._wall + (perf - self._perf)


class _SentAt:
    """httpx trace hook: remembers when the request's headers started going to the socket."""

    __slots__ = ("at",)

    def __init__(self) -> None:
        self.at: float | None = None

    async def __call__(self, name: str, info: dict[str, Any]) -> None:
        if name.endswith("send_request_headers.started"):
            self.at = time.perf_counter()


async def send_one(client: httpx.AsyncClient, request: httpx.Request, index: int, clock: Clock,
                   request_timeout_s: float, slot_wait_s: float = 0.0) -> RequestResult:
    """Send `request` (a streaming chat completion) and read its stream to the end; never raises
    for anything the server or the network does."""
    tracker = StreamTracker()
    sent = _SentAt()
    request.extensions["trace"] = sent
    status: int | None = None
    failure: str | None = None
    message: str | None = None
    ended: float | None = None  # perf_counter time the answer ended (or failed)
    handed_over = time.perf_counter()
    try:
        async with asyncio.timeout(request_timeout_s):
            response = await client.send(request, stream=True)
            try:
                status = response.status_code
                if status != 200:
                    failure, message = "http_status", f"HTTP {status}: {await _error_text(response)}"
                    ended = time.perf_counter()
                else:
                    identity = response.headers.get("content-encoding", "identity").lower() == "identity"
                    chunks = response.aiter_raw() if identity else response.aiter_bytes()
                    ended = await _read_stream(chunks, tracker)
                    if tracker.done:
                        await _drain(chunks)
            finally:
                await response.aclose()
    except TimeoutError:
        failure, message = "timeout", f"no complete answer within {request_timeout_s:g} s (--request-timeout)"
    except httpx.TimeoutException as exc:
        failure, message = "timeout", f"{type(exc).__name__} (--connect-timeout / --read-timeout): {exc}"
    except httpx.DecodingError as exc:
        failure, message = "malformed", f"the body could not be decoded: {exc}"
    except httpx.TransportError as exc:
        failure, message = "connection", f"{type(exc).__name__}: {exc}"
    if tracker.done and tracker.failure is None:
        failure, message = None, None  # complete at [DONE]; anything lost after it was only the body's tail
    elif failure is None and tracker.failure is not None:
        failure, message = tracker.failure, tracker.message
    elif failure is None:
        failure, message = "no_done", "the stream ended without data: [DONE]"
    if ended is None:  # an exception ended it
        ended = time.perf_counter()
    start = sent.at if sent.at is not None else handed_over
    return _result(index, tracker, status, failure, message, start, ended, clock, slot_wait_s)


async def _read_stream(chunks: AsyncIterator[bytes], tracker: StreamTracker) -> float:
    """Parse events as bytes arrive, until [DONE], a stream failure or the end of the body.
    Returns the perf_counter time the stream ended; the events of one read share that read's time."""
    decoder = SSEDecoder()
    async for data in chunks:
        now = time.perf_counter()
        for event in decoder.feed(data):
            tracker.feed(event, now)
        if tracker.finished:
            return now
    return time.perf_counter()


async def _drain(chunks: AsyncIterator[bytes]) -> None:
    """Read what follows [DONE] (normally only the body's end) so the connection goes back to the
    pool; a server that keeps the body open after [DONE] costs at most _DRAIN_S, not a timeout."""
    with contextlib.suppress(httpx.HTTPError, TimeoutError):
        async with asyncio.timeout(_DRAIN_S):
            async for _ in chunks:
                pass


async def _error_text(response: httpx.Response) -> str:
    """The message of an OpenAI-style error body, else the start of the body as text."""
    body = b""
    with contextlib.suppress(httpx.HTTPError):
        async for data in response.aiter_bytes():
            body += data
            if len(body) >= _ERROR_BODY_LIMIT:
                break
    text = body[:_ERROR_BODY_LIMIT].decode("utf-8", errors="replace")
    with contextlib.suppress(ValueError, AttributeError):
        error = json.loads(text).get("error")
        if isinstance(error, dict) and error.get("message"):
            return str(error["message"])
    return text.strip()[:200] or "(empty body)"


def _result(index: int, tracker: StreamTracker, status: int | None, failure: str | None, message: str | None,
            start: float, ended: float, clock: Clock, slot_wait_s: float) -> RequestResult:
    common: dict[str, Any] = dict(index=index, id=tracker.id, status=status, start=clock.epoch(start),
                                  end=clock.epoch(max(ended, start)), slot_wait_s=slot_wait_s)
    if failure is not None:
        return RequestResult(**common, outcome="failed", failure=failure, ttft_s=None, output_tokens=0,
                             tokens_from="none", tps=None, message=message)
    tokens, tokens_from = tracker.output_tokens()
    if tracker.first_content is None:
        return RequestResult(**common, outcome="empty", failure=None, ttft_s=None, output_tokens=0,
                             tokens_from=tokens_from, tps=None,
                             message=f"completed with no content after {tracker.reasoning_chunks} reasoning "
                                     f"deltas (finish_reason {tracker.finish_reason})")
    return RequestResult(**common, outcome="ok", failure=None, ttft_s=tracker.first_content - start,
                         output_tokens=tokens, tokens_from=tokens_from, tps=tracker.tps(tokens))
