"""The local route: a vLLM-compatible server, spoken to with plain httpx and relayed byte for byte.

One attempt = one request to the local server, bounded by the route's three timeouts:
connect (httpx), first byte (request sent -> response headers, and for a stream -> its first
event) and total (request sent -> last byte). A stream is committed only when its first event is
in hand, so everything that goes wrong before that (a 5xx, a timeout, a cut, an error event)
leaves the client untouched and the router free to fall back. After that, a failure ends the
client's stream with an error event and no [DONE]: the API is never asked to start over.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import AsyncGenerator, AsyncIterator

import httpx

import sse
from chat import ChatRequest
from config import LocalConfig, Timeouts
from outcomes import Relay, Reply, RouteFailed, error_body
from stats import Attempt

__all__ = ["LocalRoute"]

_PASSED_HEADERS = ("retry-after",)  # what a client needs from a 4xx besides its status and body
_ERROR_BODY_LIMIT = 64 * 1024


class LocalRoute:
    name = "local"

    def __init__(self, config: LocalConfig, client: httpx.AsyncClient) -> None:
        self.config = config
        self._client = client

    async def attempt(self, request: ChatRequest, record: Attempt) -> Reply | Relay:
        """Send once: a Reply or a Relay for the client, or RouteFailed when nothing reached it."""
        loop = asyncio.get_running_loop()
        started = loop.time()
        t = self.config.timeouts
        first_byte_by, total_by = started + t.first_byte_s, started + t.total_s
        outgoing = self._client.build_request("POST", self.config.base_url + "/chat/completions",
                                              json={**request.body, "model": self.config.model})
        try:
            try:
                async with asyncio.timeout_at(first_byte_by):
                    response = await self._client.send(outgoing, stream=True)
            except TimeoutError:
                raise RouteFailed("timeout", f"no response headers within first_byte_s={t.first_byte_s:g} s") from None
            except httpx.HTTPError as exc:
                raise _transport_failure(exc, t) from None
        except RouteFailed:
            record.failed()
            raise
        except BaseException:
            record.abandoned()  # cancelled: the client left while we waited
            raise
        return await self._answer(request, response, record, started, first_byte_by, total_by)

    async def _answer(self, request: ChatRequest, response: httpx.Response, record: Attempt, started: float,
                      first_byte_by: float, total_by: float) -> Reply | Relay:
        events: AsyncGenerator[sse.Event, None] | None = None
        try:
            try:
                if response.status_code != 200:
                    return await _not_ok(response, record, total_by)
                if not request.stream:
                    return await self._whole(response, record, started, total_by)
                events = _events(response)
                first = await _first_event(events, first_byte_by, self.config.timeouts)
            except httpx.HTTPError as exc:
                raise _transport_failure(exc, self.config.timeouts) from None
        except RouteFailed:
            record.failed()
            await _close(events, response)
            raise
        except BaseException:
            record.abandoned()
            await _close(events, response)
            raise
        return Relay(self._relay(first, events, response, record, started, total_by))

    async def _whole(self, response: httpx.Response, record: Attempt, started: float, total_by: float) -> Reply:
        """A non-streamed answer: all of it, within the total timeout, checked to be JSON before it is sent."""
        try:
            async with asyncio.timeout_at(total_by):
                body = await response.aread()
        except TimeoutError:
            total_s = self.config.timeouts.total_s
            raise RouteFailed("timeout", f"the answer was not complete within total_s={total_s:g} s") from None
        finally:
            await response.aclose()
        try:
            parsed = json.loads(body)
        except (json.JSONDecodeError, UnicodeDecodeError):
            parsed = None
        if not isinstance(parsed, dict) or "choices" not in parsed:
            raise RouteFailed("stream", f"HTTP 200 with a body that is not a chat completion: {body[:80]!r}")
        record.succeeded(asyncio.get_running_loop().time() - started)
        return Reply(200, body, response.headers.get("content-type", "application/json"))

    async def _relay(self, first: sse.Event, events: AsyncGenerator[sse.Event, None], response: httpx.Response,
                     record: Attempt, started: float, total_by: float) -> AsyncIterator[bytes]:
        """Forward each event as it arrives. Ends with [DONE], or with one error event and no [DONE]."""
        loop = asyncio.get_running_loop()
        total_s = self.config.timeouts.total_s
        event: sse.Event | None = first
        try:
            while event is not None:
                if event.kind == "done":
                    record.succeeded(loop.time() - started)
                    yield event.raw
                    await _drain(events, total_by)
                    return
                if event.kind == "error":      # the server's own in-stream error: pass it on and end there
                    record.failed()
                    yield event.raw
                    return
                if event.kind == "malformed":
                    record.failed()
                    yield _stream_error(f"the local route sent {event.error}")
                    return
                yield event.raw
                try:
                    async with asyncio.timeout_at(total_by):
                        event = await anext(events, None)
                except TimeoutError:
                    record.failed()
                    yield _stream_error(f"the local route did not finish within total_s={total_s:g} s", 504)
                    return
                except httpx.HTTPError as exc:
                    record.failed()
                    yield _stream_error(f"the local route's stream broke: {type(exc).__name__}: {exc}")
                    return
            record.failed()
            yield _stream_error("the local route's stream ended without [DONE]")
        finally:
            record.abandoned()  # a no-op unless the client went away before the end
            await _close(events, response)


async def _not_ok(response: httpx.Response, record: Attempt, total_by: float) -> Reply:
    """A 4xx is the client's answer, passed through unchanged; anything else is the route failing."""
    body = b""
    try:
        async with asyncio.timeout_at(total_by):
            async for part in response.aiter_bytes():
                body += part
                if len(body) > _ERROR_BODY_LIMIT:
                    break
    except (httpx.HTTPError, TimeoutError):
        pass  # the status alone decides what happens next; a half-read error body changes nothing
    finally:
        await response.aclose()
    status = response.status_code
    if 400 <= status < 500:
        record.failed()
        headers = {k: response.headers[k] for k in _PASSED_HEADERS if k in response.headers}
        return Reply(status, body, response.headers.get("content-type", "application/json"), headers)
    raise RouteFailed("status", f"HTTP {status}: {_message(body)}")


async def _events(response: httpx.Response) -> AsyncGenerator[sse.Event, None]:
    splitter = sse.EventSplitter()
    async for data in response.aiter_bytes():
        for event in splitter.feed(data):
            yield event


async def _first_event(events: AsyncGenerator[sse.Event, None], first_byte_by: float, t: Timeouts) -> sse.Event:
    """The first data event (comments before it are dropped); failing here still allows a fallback."""
    try:
        async with asyncio.timeout_at(first_byte_by):
            async for event in events:
                if event.kind == "comment":
                    continue
                if event.kind in ("error", "malformed"):
                    raise RouteFailed("stream", f"the stream's first event was an error: {event.error}")
                return event
    except TimeoutError:
        raise RouteFailed("timeout", f"no first event within first_byte_s={t.first_byte_s:g} s") from None
    raise RouteFailed("stream", "the stream ended before its first event")


async def _drain(events: AsyncGenerator[sse.Event, None], total_by: float) -> None:
    """Read the body's end after [DONE], so the connection goes back to the pool instead of being closed
    (a new connection per streamed request costs more than the rest of the gateway's work together)."""
    with contextlib.suppress(httpx.HTTPError, TimeoutError):
        async with asyncio.timeout_at(total_by):
            async for _ in events:
                pass  # nothing should follow [DONE]; whatever does is not the client's


async def _close(events: AsyncGenerator[sse.Event, None] | None, response: httpx.Response) -> None:
    if events is not None:
        await events.aclose()
    await response.aclose()


def _transport_failure(exc: httpx.HTTPError, t: Timeouts) -> RouteFailed:
    if isinstance(exc, httpx.ConnectTimeout):
        return RouteFailed("timeout", f"could not connect within connect_s={t.connect_s:g} s")
    if isinstance(exc, httpx.TimeoutException):
        return RouteFailed("timeout", f"{type(exc).__name__}: {exc}")
    return RouteFailed("connection", f"{type(exc).__name__}: {exc}")


def _message(body: bytes) -> str:
    try:
        error = json.loads(body).get("error")
        return str(error.get("message") if isinstance(error, dict) else error)
    except (ValueError, AttributeError):
        return body[:200].decode("utf-8", "replace")


def _stream_error(message: str, code: int = 502) -> bytes:
    return sse.encode(error_body(message, "gateway_error", code))
