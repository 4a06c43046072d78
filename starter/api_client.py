"""A small client for the hosted API route of your gateway. You may use it as it is.

It talks to any OpenAI-compatible `/v1/chat/completions` endpoint (in this kit: `fake-server
serve --persona api`), streaming or not, synchronously or with asyncio, and reports for each call
the usage, the cost in USD from the API's price table, and the latency.

    from api_client import ApiClient, ApiClientError, ApiServerError, ApiTimeout, ApiConnectionError

    client = ApiClient("http://127.0.0.1:8100/v1", api_key="sk-test")
    reply = client.chat([{"role": "user", "content": "Hello"}], model="opus-5.5", max_tokens=64)
    reply.text, reply.usage.output_tokens, reply.cost_usd, reply.latency_s

    with client.stream_chat(messages, model="opus-5.5", max_tokens=64) as stream:
        for piece in stream:
            if piece.text: ...                  # content deltas, as they arrive
            if piece.result: piece.result.cost_usd  # the last item carries the whole result

    async with AsyncApiClient(base_url, api_key=...) as client:
        reply = await client.chat(...)
        async with client.stream_chat(...) as stream:
            async for piece in stream: ...

A stream is also a plain iterator (`for piece in client.stream_chat(...)`); the `with` block
closes its connection at once if you stop early (a relay whose own client left, say), where an
abandoned iterator would hold it until it is garbage-collected. `SSEDecoder` is the
server-sent-events parser the streams use, for any other SSE you read.

Errors, by kind (every one is an `ApiError`):

    ApiError
    ├── ApiStatusError        the API answered with an HTTP error; `.status`, `.body`, `.retry_after`
    │   ├── ApiClientError    4xx: the request is wrong, unauthorised or rate-limited (429)
    │   └── ApiServerError    5xx: the API failed
    ├── ApiStreamError        a 200 answer that did not complete: an in-stream error, a cut, a
    │                         malformed chunk, no [DONE], or a body that cannot be used
    ├── ApiTimeout            too slow; `.phase` says which limit: connect, pool, first_byte, total
    └── ApiConnectionError    the API could not be reached (refused, reset before any answer, DNS)

Timeouts (`Timeouts(connect, first_byte, total)`), as the gateway contract has them: `connect`
bounds opening a connection; `first_byte` bounds, counted from the call, the wait for the headers
and, in a stream, its first event (phase "first_byte"); `total` bounds the whole call, and after a
stream's first event only `total` does: a pause between events is no timeout until `total` has
passed (phase "total"). A non-streamed answer arrives all at once when it is complete, so
`first_byte` bounds the wait for the whole answer there, as the contract's `first_byte_s` does;
give a gateway's timeouts to the client as they are and both routes keep the same rule. The client
opens as many connections as calls in flight, so no call waits for a free one.

Prices: pass `prices=Prices(input_per_million=4, output_per_million=20)`, or leave it out and the
client reads them once from the API's `/v1/models` (`pricing`). Output tokens are the usage's
`completion_tokens`, which include reasoning tokens; the API bills them all.
Only dependency: httpx.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import queue
import threading
import time
from collections.abc import AsyncGenerator, Generator
from dataclasses import dataclass
from typing import Any, Self

import httpx

__all__ = [
    "ApiClient",
    "ApiClientError",
    "ApiConnectionError",
    "ApiError",
    "ApiServerError",
    "ApiStatusError",
    "ApiStreamError",
    "ApiTimeout",
    "AsyncApiClient",
    "AsyncChatStream",
    "ChatResult",
    "ChatStream",
    "Prices",
    "SSEDecoder",
    "StreamPiece",
    "Timeouts",
    "Usage",
]


class ApiError(Exception):
    """Anything that went wrong calling the API.

    When a stream fails after it started, the API has still billed what it generated so far:
    `usage` and `cost_usd` are then what the last chunk reported (streams ask for usage on every
    chunk), else None.
    """

    usage: Usage | None = None
    cost_usd: float | None = None


class ApiStatusError(ApiError):
    def __init__(self, status: int, body: Any, retry_after: float | None = None) -> None:
        message = body.get("error", {}).get("message") if isinstance(body, dict) and isinstance(body.get("error"), dict) else body
        super().__init__(f"HTTP {status}: {message}")
        self.status = status
        self.body = body
        self.retry_after = retry_after


class ApiClientError(ApiStatusError):
    """4xx. Do not retry it elsewhere unchanged: the request itself is the problem (or the key, or the rate)."""


class ApiServerError(ApiStatusError):
    """5xx."""


class ApiStreamError(ApiError):
    """The answer started (HTTP 200) but did not complete properly."""


class ApiTimeout(ApiError):
    """Too slow; `.phase` is "connect", "pool", "first_byte" or "total"."""

    def __init__(self, phase: str, seconds: float) -> None:
        super().__init__(f"{phase} timeout after {seconds:g} s")
        self.phase = phase


class ApiConnectionError(ApiError):
    """The API could not be reached, or the connection broke before an answer."""


@dataclass(frozen=True)
class Timeouts:
    connect: float = 5.0
    first_byte: float = 30.0
    total: float = 120.0


@dataclass(frozen=True)
class Prices:
    input_per_million: float
    output_per_million: float

    def cost(self, usage: Usage) -> float:
        return (usage.input_tokens * self.input_per_million + usage.output_tokens * self.output_per_million) / 1e6


@dataclass(frozen=True)
class Usage:
    input_tokens: int
    output_tokens: int
    reasoning_tokens: int = 0
    cached_tokens: int = 0

    @classmethod
    def from_openai(cls, usage: dict[str, Any]) -> Usage:
        details = usage.get("completion_tokens_details") or {}
        prompt_details = usage.get("prompt_tokens_details") or {}
        return cls(int(usage.get("prompt_tokens", 0)), int(usage.get("completion_tokens", 0)),
                   int(details.get("reasoning_tokens") or 0), int(prompt_details.get("cached_tokens") or 0))


@dataclass(frozen=True)
class ChatResult:
    text: str
    model: str
    finish_reason: str | None
    usage: Usage
    cost_usd: float
    latency_s: float
    ttft_s: float | None = None


@dataclass(frozen=True)
class StreamPiece:
    """One content delta (`text`), or, last, the whole result (`result`)."""

    text: str = ""
    result: ChatResult | None = None


def _body(
    messages: list[dict[str, Any]], model: str, max_tokens: int | None, extra: dict[str, Any], *, stream: bool
) -> dict[str, Any]:
    body: dict[str, Any] = {"model": model, "messages": messages, "stream": stream, **extra}
    if max_tokens is not None:
        body["max_tokens"] = max_tokens
    if stream:
        # usage on every chunk too, so a stream cut half-way can still be costed
        body["stream_options"] = {"include_usage": True, "continuous_usage_stats": True}
    return body


def _status_error(response: httpx.Response) -> ApiStatusError:
    try:
        body: Any = response.json()
    except ValueError:
        body = response.text
    retry = response.headers.get("retry-after")
    retry_after = float(retry) if retry and retry.replace(".", "", 1).isdigit() else None
    cls = ApiClientError if response.status_code < 500 else ApiServerError
    return cls(response.status_code, body, retry_after)


def _stream_timeout(timeouts: Timeouts) -> httpx.Timeout:
    """httpx's own limits for a stream: no read may outlast the call; the first event's and the call's deadlines
    are kept by the stream itself (a read timeout would bound each pause between reads, which the contract does not)."""
    return httpx.Timeout(connect=timeouts.connect, read=timeouts.total, write=timeouts.connect, pool=timeouts.connect)


def _whole_timeout(timeouts: Timeouts) -> httpx.Timeout:
    """A non-streamed answer's first byte is its whole answer: `first_byte` bounds the wait for it."""
    read = min(timeouts.first_byte, timeouts.total)
    return httpx.Timeout(connect=timeouts.connect, read=read, write=timeouts.connect, pool=timeouts.connect)


_LIMITS = httpx.Limits(max_connections=None, max_keepalive_connections=64)


def _translate(exc: Exception, timeouts: Timeouts, *, answered: bool, streaming: bool, first_byte: bool) -> ApiError:
    """An httpx error as the kind of failure it is, at the point of the call where it happened."""
    if isinstance(exc, httpx.PoolTimeout):
        return ApiTimeout("pool", timeouts.connect)
    if isinstance(exc, httpx.ConnectTimeout):
        return ApiTimeout("connect", timeouts.connect)
    if isinstance(exc, httpx.TimeoutException):
        if not streaming:  # the wait for a whole answer: bounded by first_byte (or total, if that is shorter)
            return (ApiTimeout("first_byte", timeouts.first_byte) if timeouts.first_byte < timeouts.total
                    else ApiTimeout("total", timeouts.total))
        return _phase(timeouts, first_event=first_byte)
    if answered:
        return ApiStreamError(f"the answer was cut: {type(exc).__name__}: {exc}")
    return ApiConnectionError(f"{type(exc).__name__}: {exc}")


def _phase(timeouts: Timeouts, *, first_event: bool) -> ApiTimeout:
    """A stream's timeout: the first event's (first_byte) until it arrived, the call's (total) after."""
    if first_event or timeouts.total <= timeouts.first_byte:
        return ApiTimeout("total", timeouts.total)
    return ApiTimeout("first_byte", timeouts.first_byte)


def _deadlines(timeouts: Timeouts, start: float) -> tuple[float, float]:
    """When, on time.perf_counter(), a stream must have its first event, and when it must have ended."""
    return start + min(timeouts.first_byte, timeouts.total), start + timeouts.total


class _Arrivals:
    """A sync stream's call made on a thread of its own, so its deadlines hold while it waits: the response's
    headers and then its text are handed over as they arrive, each wait bounded by a deadline
    (time.perf_counter()). httpx's own read timeout (`total`) ends the thread's wait at the latest."""

    def __init__(self, http: httpx.Client, url: str, body: dict[str, Any]) -> None:
        self._queue: queue.Queue[tuple[str, Any]] = queue.Queue()
        self._response: httpx.Response | None = None
        self._left = threading.Event()  # the caller has gone: stop reading
        threading.Thread(target=self._call, args=(http, url, body), name="api-client-stream", daemon=True).start()

    def _call(self, http: httpx.Client, url: str, body: dict[str, Any]) -> None:
        try:
            with http.stream("POST", url, json=body) as response:
                self._response = response
                if response.status_code >= 400:
                    response.read()
                self._queue.put(("headers", response))
                if response.status_code >= 400:
                    return
                for text in response.iter_text():
                    if self._left.is_set():
                        return
                    self._queue.put(("text", text))
            self._queue.put(("end", None))
        except Exception as exc:  # handed to the caller, who raises it as the kind of failure it is
            self._queue.put(("error", exc))

    def next(self, deadline: float) -> tuple[str, Any]:
        """The next thing that arrived: ("headers", response), ("text", str) or ("end", None); TimeoutError
        past `deadline`, and what the call raised as it is."""
        try:
            kind, value = self._queue.get(timeout=max(0.0, deadline - time.perf_counter()))
        except queue.Empty:
            raise TimeoutError from None
        if kind == "error":
            raise value
        return kind, value

    def close(self) -> None:
        """Stop: the thread reads no further, and the connection is closed (the API stops generating)."""
        self._left.set()
        if self._response is not None:
            with contextlib.suppress(Exception):
                self._response.close()


class SSEDecoder:
    """Server-sent events, parsed as the HTML standard says, fed text as it arrives.

    Lines end with CRLF, LF or CR (also when a CRLF is split between two reads); `data:x` and
    `data: x` are the same field; lines starting with ":" are comments; several `data:` lines of
    one event are joined with newlines; a blank line ends the event. `feed` returns the data of
    every event the text completed; an event left unfinished when the stream ends is dropped.
    """

    def __init__(self) -> None:
        self._partial = ""  # the start of a line whose end has not arrived yet
        self._data: list[str] = []  # the current event's `data:` lines
        self._after_cr = False  # the last text ended in CR: a LF starting the next one is part of it

    def feed(self, text: str) -> list[str]:
        if self._after_cr and text.startswith("\n"):
            text = text[1:]
        self._after_cr = text.endswith("\r")
        lines = (self._partial + text).replace("\r\n", "\n").replace("\r", "\n").split("\n")
        self._partial = lines.pop()
        events = []
        for line in lines:
            if not line:
                if self._data:
                    events.append("\n".join(self._data))
                self._data = []
            elif not line.startswith(":"):
                name, _, value = line.partition(":")
                if name == "data":
                    self._data.append(value.removeprefix(" "))
        return events


class _StreamParser:
    """Reads the events of a chat stream into text deltas and the final usage."""

    def __init__(self, start: float) -> None:
        self.start = start
        self.ttft: float | None = None
        self.text: list[str] = []
        self.usage: dict[str, Any] | None = None
        self.finish_reason: str | None = None
        self.model = ""
        self.done = False

    def feed(self, data: str) -> str:
        """One event's data in; the content it carries (maybe "") out."""
        if data == "[DONE]":
            self.done = True
            return ""
        try:
            chunk = json.loads(data)
        except json.JSONDecodeError as exc:
            raise ApiStreamError(f"malformed chunk: {data[:80]!r}") from exc
        if not isinstance(chunk, dict):
            raise ApiStreamError(f"malformed chunk (not a JSON object): {data[:80]!r}")
        if "error" in chunk:
            raise ApiStreamError(f"in-stream error: {chunk['error']}")
        self.model = chunk.get("model", self.model)
        if chunk.get("usage"):
            self.usage = chunk["usage"]
        piece = ""
        for choice in chunk.get("choices") or []:
            piece += (choice.get("delta") or {}).get("content") or ""
            self.finish_reason = choice.get("finish_reason") or self.finish_reason
        if piece:
            self.text.append(piece)
            if self.ttft is None:
                self.ttft = time.perf_counter() - self.start
        return piece


class ChatStream:
    """The pieces of one streamed call, as they arrive (what `ApiClient.stream_chat` returns).

    Iterate it; use it as a context manager (or call `close()`) when you may stop before the end:
    leaving the block closes the connection at once, as httpx's `stream()` does, so the API stops
    generating and the connection is not left half-read. The request is sent on the first
    iteration.
    """

    def __init__(self, pieces: Generator[StreamPiece, None, None]) -> None:
        self._pieces = pieces

    def __iter__(self) -> ChatStream:
        return self

    def __next__(self) -> StreamPiece:
        return next(self._pieces)

    def close(self) -> None:
        self._pieces.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class AsyncChatStream:
    """`ChatStream` for asyncio (what `AsyncApiClient.stream_chat` returns): `async for`, `async with`, `aclose()`."""

    def __init__(self, pieces: AsyncGenerator[StreamPiece, None]) -> None:
        self._pieces = pieces

    def __aiter__(self) -> AsyncChatStream:
        return self

    async def __anext__(self) -> StreamPiece:
        return await self._pieces.__anext__()

    async def aclose(self) -> None:
        await self._pieces.aclose()

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()


class _Base:
    def __init__(self, base_url: str, api_key: str, prices: Prices | None, timeouts: Timeouts | None) -> None:
        self.base_url = base_url.rstrip("/")
        self.api_key = api_key
        self.prices = prices
        self.timeouts = timeouts or Timeouts()
        self.headers = {"Authorization": f"Bearer {api_key}"}

    def _prices_from(self, response: httpx.Response) -> Prices:
        try:
            models = response.json()
        except ValueError as exc:
            raise ApiError(f"/v1/models did not answer JSON: {response.text[:80]!r}") from exc
        for entry in (models.get("data") or []) if isinstance(models, dict) else []:
            pricing = entry.get("pricing")
            if pricing:
                return Prices(float(pricing["input_per_million_usd"]), float(pricing["output_per_million_usd"]))
        raise ApiError("the API publishes no prices in /v1/models; pass prices=Prices(...)")

    def _billed(self, error: ApiError, parser: _StreamParser) -> ApiError:
        """Attach to `error` what the failed stream had already cost, as far as its chunks said."""
        if parser.usage is not None and self.prices is not None:
            error.usage = Usage.from_openai(parser.usage)
            error.cost_usd = self.prices.cost(error.usage)
        return error

    def _stream_result(self, parser: _StreamParser, model: str, start: float) -> ChatResult:
        """A stream that ended: its result, or the error it is (no [DONE] is a failure, and billed)."""
        if not parser.done:
            raise self._billed(ApiStreamError("the stream ended without [DONE]"), parser)
        return self._result("".join(parser.text), parser.model or model, parser.finish_reason, parser.usage, start,
                            parser.ttft)

    def _whole_result(self, response: httpx.Response, model: str, start: float) -> ChatResult:
        """A non-streamed answer as a ChatResult, or the error it is."""
        if response.status_code >= 400:
            raise _status_error(response)
        try:
            data = response.json()
        except ValueError as exc:
            raise ApiStreamError(f"the response is not JSON: {response.text[:80]!r}") from exc
        if not isinstance(data, dict):
            raise ApiStreamError(f"the response is not a JSON object: {response.text[:80]!r}")
        choice = (data.get("choices") or [{}])[0]
        text = (choice.get("message") or {}).get("content") or ""
        return self._result(text, data.get("model", model), choice.get("finish_reason"), data.get("usage"), start, None)

    def _result(self, text: str, model: str, finish: str | None, usage: dict[str, Any] | None, start: float,
                ttft: float | None) -> ChatResult:
        if usage is None:
            raise ApiStreamError("the API returned no usage, so the call cannot be costed")
        assert self.prices is not None
        u = Usage.from_openai(usage)
        return ChatResult(text, model, finish, u, self.prices.cost(u), time.perf_counter() - start, ttft)


class ApiClient(_Base):
    """Synchronous client. One instance can be shared by threads (httpx.Client is thread-safe)."""

    def __init__(self, base_url: str, api_key: str, prices: Prices | None = None, timeouts: Timeouts | None = None) -> None:
        super().__init__(base_url, api_key, prices, timeouts)
        self._http = httpx.Client(timeout=_stream_timeout(self.timeouts), headers=self.headers, limits=_LIMITS)

    def close(self) -> None:
        self._http.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _ensure_prices(self) -> None:
        if self.prices is None:
            try:
                response = self._http.get(self.base_url + "/models")
            except httpx.HTTPError as exc:
                raise _translate(exc, self.timeouts, answered=False, streaming=False, first_byte=False) from exc
            if response.status_code >= 400:
                raise _status_error(response)
            self.prices = self._prices_from(response)

    def chat(self, messages: list[dict[str, Any]], model: str, max_tokens: int | None = None, **extra: Any) -> ChatResult:
        self._ensure_prices()
        start = time.perf_counter()
        answered = False
        try:
            with self._http.stream("POST", self.base_url + "/chat/completions",
                                   json=_body(messages, model, max_tokens, extra, stream=False),
                                   timeout=_whole_timeout(self.timeouts)) as response:
                answered = True
                response.read()
        except httpx.HTTPError as exc:
            raise _translate(exc, self.timeouts, answered=answered, streaming=False, first_byte=False) from exc
        return self._whole_result(response, model, start)

    def stream_chat(self, messages: list[dict[str, Any]], model: str, max_tokens: int | None = None,
                    **extra: Any) -> ChatStream:
        """Content deltas as they arrive, then the whole result; see `ChatStream`."""
        return ChatStream(self._stream(messages, model, max_tokens, extra))

    def _stream(self, messages: list[dict[str, Any]], model: str, max_tokens: int | None,
                extra: dict[str, Any]) -> Generator[StreamPiece, None, None]:
        self._ensure_prices()
        start = time.perf_counter()
        first_by, total_by = _deadlines(self.timeouts, start)
        parser, answered, first_event = _StreamParser(start), False, False
        call = _Arrivals(self._http, self.base_url + "/chat/completions",
                         _body(messages, model, max_tokens, extra, stream=True))
        try:
            _, response = call.next(first_by)  # the headers, within the first event's time
            if response.status_code >= 400:
                raise _status_error(response)
            answered = True
            decoder = SSEDecoder()
            while True:
                kind, text = call.next(total_by if first_event else first_by)
                if kind == "end":
                    break
                for data in decoder.feed(text):
                    first_event = True
                    piece = parser.feed(data)
                    if piece:
                        yield StreamPiece(text=piece)
        except TimeoutError:
            raise self._billed(_phase(self.timeouts, first_event=first_event), parser) from None
        except httpx.HTTPError as exc:
            error = _translate(exc, self.timeouts, answered=answered, streaming=True, first_byte=first_event)
            raise self._billed(error, parser) from exc
        except (ApiStreamError, ApiTimeout) as exc:
            raise self._billed(exc, parser) from None
        finally:
            call.close()
        yield StreamPiece(result=self._stream_result(parser, model, start))


class AsyncApiClient(_Base):
    """The same client for asyncio."""

    def __init__(self, base_url: str, api_key: str, prices: Prices | None = None, timeouts: Timeouts | None = None) -> None:
        super().__init__(base_url, api_key, prices, timeouts)
        self._http = httpx.AsyncClient(timeout=_stream_timeout(self.timeouts), headers=self.headers, limits=_LIMITS)

    async def aclose(self) -> None:
        await self._http.aclose()

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    async def _ensure_prices(self) -> None:
        if self.prices is None:
            try:
                response = await self._http.get(self.base_url + "/models")
            except httpx.HTTPError as exc:
                raise _translate(exc, self.timeouts, answered=False, streaming=False, first_byte=False) from exc
            if response.status_code >= 400:
                raise _status_error(response)
            self.prices = self._prices_from(response)

    async def chat(self, messages: list[dict[str, Any]], model: str, max_tokens: int | None = None, **extra: Any) -> ChatResult:
        await self._ensure_prices()
        start = time.perf_counter()
        answered = False
        try:
            async with asyncio.timeout(self.timeouts.total):
                async with self._http.stream("POST", self.base_url + "/chat/completions",
                                             json=_body(messages, model, max_tokens, extra, stream=False),
                                             timeout=_whole_timeout(self.timeouts)) as response:
                    answered = True
                    await response.aread()
        except TimeoutError as exc:
            raise ApiTimeout("total", self.timeouts.total) from exc
        except httpx.HTTPError as exc:
            raise _translate(exc, self.timeouts, answered=answered, streaming=False, first_byte=False) from exc
        return self._whole_result(response, model, start)

    def stream_chat(self, messages: list[dict[str, Any]], model: str, max_tokens: int | None = None,
                    **extra: Any) -> AsyncChatStream:
        """Content deltas as they arrive, then the whole result; see `AsyncChatStream`."""
        return AsyncChatStream(self._stream(messages, model, max_tokens, extra))

    async def _stream(self, messages: list[dict[str, Any]], model: str, max_tokens: int | None,
                      extra: dict[str, Any]) -> AsyncGenerator[StreamPiece, None]:
        await self._ensure_prices()
        start = time.perf_counter()
        first_by, total_by = _deadlines(self.timeouts, start)
        parser, answered, first_event = _StreamParser(start), False, False
        call = self._http.stream("POST", self.base_url + "/chat/completions",
                                 json=_body(messages, model, max_tokens, extra, stream=True))
        try:
            async with asyncio.timeout(max(0.0, first_by - time.perf_counter())):
                response = await call.__aenter__()  # the headers, within the first event's time
        except TimeoutError:
            raise ApiTimeout("first_byte", min(self.timeouts.first_byte, self.timeouts.total)) from None
        except httpx.HTTPError as exc:
            raise _translate(exc, self.timeouts, answered=False, streaming=True, first_byte=False) from exc
        try:
            if response.status_code >= 400:
                await response.aread()
                raise _status_error(response)
            answered = True
            decoder = SSEDecoder()
            texts = response.aiter_text()
            while True:
                deadline = total_by if first_event else first_by
                try:
                    async with asyncio.timeout(max(0.0, deadline - time.perf_counter())):
                        text = await anext(texts)
                except StopAsyncIteration:
                    break
                for data in decoder.feed(text):
                    first_event = True
                    piece = parser.feed(data)
                    if piece:
                        yield StreamPiece(text=piece)
        except TimeoutError:
            raise self._billed(_phase(self.timeouts, first_event=first_event), parser) from None
        except httpx.HTTPError as exc:
            error = _translate(exc, self.timeouts, answered=answered, streaming=True, first_byte=first_event)
            raise self._billed(error, parser) from exc
        except (ApiStreamError, ApiTimeout) as exc:
            raise self._billed(exc, parser) from None
        finally:
            await call.__aexit__(None, None, None)
        yield StreamPiece(result=self._stream_result(parser, model, start))
