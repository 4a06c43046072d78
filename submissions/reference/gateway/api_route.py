"""The API route, through the kit's stub client (`starter/api_client.py`), as candidates are asked to.

The stub parses the API's stream into content deltas and ends with the whole result (usage and
cost), so the gateway writes the client's OpenAI chunks itself: a role chunk, one chunk per
delta as it arrives, a finish chunk, the usage chunk when the client asked for one, [DONE].
Each names the API route's model. The stub applies the connect and first-byte timeouts (its
first-byte timeout also bounds each gap between chunks); the gateway adds the total one.
"""

from __future__ import annotations

import asyncio
import json
import time
import uuid
from collections.abc import AsyncGenerator, AsyncIterator
from typing import Any, cast

from api_client import (
    ApiClientError,
    ApiConnectionError,
    ApiError,
    ApiStatusError,
    ApiTimeout,
    AsyncApiClient,
    ChatResult,
    Prices,
    StreamPiece,
    Timeouts,
)

import sse
from chat import ChatRequest
from config import ApiConfig
from outcomes import FailureKind, Relay, Reply, RouteFailed, error_body
from stats import Attempt

__all__ = ["ApiRoute", "make_client"]

_NOT_EXTRA = ("model", "messages", "stream", "stream_options", "max_tokens")  # set by the stub itself


def make_client(config: ApiConfig) -> AsyncApiClient:
    p, t = config.prices, config.timeouts
    return AsyncApiClient(config.base_url, config.api_key,
                          prices=Prices(p.input_per_million_usd, p.output_per_million_usd),
                          timeouts=Timeouts(connect=t.connect_s, first_byte=t.first_byte_s, total=t.total_s))


class ApiRoute:
    name = "api"

    def __init__(self, config: ApiConfig, client: AsyncApiClient) -> None:
        self.config = config
        self._client = client

    async def attempt(self, request: ChatRequest, record: Attempt) -> Reply | Relay:
        """Send once: a Reply or a Relay for the client, or RouteFailed when nothing reached it."""
        loop = asyncio.get_running_loop()
        started = loop.time()
        total_by = started + self.config.timeouts.total_s
        max_tokens = request.body.get("max_tokens")
        extra = {k: v for k, v in request.body.items() if k not in _NOT_EXTRA}
        stream = self._client.stream_chat(request.messages, model=self.config.model, max_tokens=max_tokens, **extra)
        pieces = cast(AsyncGenerator[StreamPiece, None], stream)
        try:
            first = await self._next(pieces, total_by)
            if request.stream:
                return Relay(self._relay(first, pieces, request, record, started, total_by))
            result = first.result
            while result is None:
                result = (await self._next(pieces, total_by)).result
        except ApiClientError as exc:  # the API's 4xx is the client's answer, as the local route's is
            record.failed()
            await pieces.aclose()
            return _passed_through(exc)
        except RouteFailed as exc:
            record.failed(exc.cost_usd)
            await pieces.aclose()
            raise
        except BaseException:
            record.abandoned()
            await pieces.aclose()
            raise
        record.succeeded(loop.time() - started, result.cost_usd)
        await pieces.aclose()
        return Reply(200, json.dumps(_completion(result, self.config.model)).encode())

    async def _next(self, pieces: AsyncGenerator[StreamPiece, None], total_by: float) -> StreamPiece:
        """The next piece, or RouteFailed saying why there is none."""
        try:
            async with asyncio.timeout_at(total_by):
                return await anext(pieces)
        except TimeoutError:
            total_s = self.config.timeouts.total_s
            raise RouteFailed("timeout", f"no complete answer within total_s={total_s:g} s") from None
        except ApiClientError:
            raise
        except ApiError as exc:
            raise RouteFailed(_kind(exc), f"{type(exc).__name__}: {exc}", exc.cost_usd or 0.0) from None
        except StopAsyncIteration:
            raise RouteFailed("stream", "the API client ended without a result") from None

    async def _relay(self, first: StreamPiece, pieces: AsyncGenerator[StreamPiece, None], request: ChatRequest,
                     record: Attempt, started: float, total_by: float) -> AsyncIterator[bytes]:
        chunks = _Chunks(self.config.model)
        piece = first
        try:
            yield chunks.role()
            while True:
                if piece.text:
                    yield chunks.content(piece.text)
                if piece.result is not None:
                    result = piece.result
                    record.succeeded(asyncio.get_running_loop().time() - started, result.cost_usd)
                    yield chunks.finish(result.finish_reason)
                    if request.include_usage:
                        yield chunks.usage(result)
                    yield sse.DONE
                    return
                try:
                    piece = await self._next(pieces, total_by)
                except (RouteFailed, ApiClientError) as exc:
                    record.failed(exc.cost_usd if isinstance(exc, RouteFailed) else 0.0)  # billed even though it failed
                    code = 504 if isinstance(exc, RouteFailed) and exc.kind == "timeout" else 502
                    yield sse.encode(error_body(f"the API route failed mid-stream: {exc}", "gateway_error", code))
                    return
        finally:
            record.abandoned()
            await pieces.aclose()


def _kind(exc: ApiError) -> FailureKind:
    if isinstance(exc, ApiTimeout):
        return "timeout"
    if isinstance(exc, ApiConnectionError):
        return "connection"
    return "status" if isinstance(exc, ApiStatusError) else "stream"


def _passed_through(exc: ApiClientError) -> Reply:
    headers = {}
    if exc.retry_after is not None:
        headers["retry-after"] = f"{exc.retry_after:g}"
    if isinstance(exc.body, (dict, list)):
        return Reply(exc.status, json.dumps(exc.body).encode(), "application/json", headers)
    return Reply(exc.status, str(exc.body).encode(), "text/plain; charset=utf-8", headers)


def _usage(result: ChatResult) -> dict[str, Any]:
    u = result.usage
    usage: dict[str, Any] = {"prompt_tokens": u.input_tokens, "completion_tokens": u.output_tokens,
                             "total_tokens": u.input_tokens + u.output_tokens,
                             "prompt_tokens_details": {"cached_tokens": u.cached_tokens}}
    if u.reasoning_tokens:
        usage["completion_tokens_details"] = {"reasoning_tokens": u.reasoning_tokens}
    return usage


def _completion(result: ChatResult, model: str) -> dict[str, Any]:
    """A non-streamed chat completion built from the stub's result."""
    return {"id": _new_id(), "object": "chat.completion", "created": int(time.time()), "model": model,
            "choices": [{"index": 0, "message": {"role": "assistant", "content": result.text},
                         "logprobs": None, "finish_reason": result.finish_reason}],
            "usage": _usage(result)}


def _new_id() -> str:
    return f"chatcmpl-{uuid.uuid4().hex}"


class _Chunks:
    """The OpenAI chunks of one streamed answer, all with one id, one creation time and the route's model."""

    def __init__(self, model: str) -> None:
        self._base = {"id": _new_id(), "object": "chat.completion.chunk", "created": int(time.time()), "model": model}

    def _choice(self, delta: dict[str, Any], finish_reason: str | None = None) -> bytes:
        choice = {"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish_reason}
        return sse.encode({**self._base, "choices": [choice]})

    def role(self) -> bytes:
        return self._choice({"role": "assistant", "content": ""})

    def content(self, text: str) -> bytes:
        return self._choice({"content": text})

    def finish(self, reason: str | None) -> bytes:
        return self._choice({}, reason or "stop")

    def usage(self, result: ChatResult) -> bytes:
        return sse.encode({**self._base, "choices": [], "usage": _usage(result)})
