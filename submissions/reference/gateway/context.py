"""Does a request fit the local model's context? Asked before the local route is tried, because a
too-long prompt sent there only comes back as a 400 that must not fall back (a 4xx never does).

Prompt tokens come from the local server's own `POST /tokenize` (its chat template and
tokenizer, so the count is the one it will enforce) and are cached per message list; the limit
comes from `GET /v1/models` (`max_model_len`), cached, and refreshed from `/tokenize`'s answer.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import logging
from collections import OrderedDict
from dataclasses import dataclass
from typing import Any

import httpx

from config import LocalConfig

__all__ = ["ContextCheck", "Fit", "PrecheckUnreachable"]

log = logging.getLogger("gateway.context")

CACHE_SIZE = 4096


class PrecheckUnreachable(Exception):
    """The local server did not answer `/tokenize` (refused, reset or too slow): the local route is down."""


@dataclass(frozen=True)
class Fit:
    fits: bool | None              # None: unknown (the server could not count), so let the route decide
    prompt_tokens: int | None = None
    max_tokens: int | None = None
    max_model_len: int | None = None

    def explain(self) -> str:
        wanted = f" + max_tokens {self.max_tokens}" if self.max_tokens is not None else ""
        return (f"the prompt is {self.prompt_tokens} tokens{wanted}, over the local model's context "
                f"length of {self.max_model_len} tokens")


def too_long(prompt_tokens: int, max_tokens: int | None, max_model_len: int) -> bool:
    """vLLM's rule: prompt + max_tokens may not exceed the limit; without max_tokens, the prompt must
    leave room for one token."""
    return prompt_tokens >= max_model_len if max_tokens is None else prompt_tokens + max_tokens > max_model_len


class ContextCheck:
    def __init__(self, client: httpx.AsyncClient, local: LocalConfig) -> None:
        self._client = client
        self._local = local
        self.max_model_len: int | None = None
        self._counts: OrderedDict[str, int] = OrderedDict()
        self._pending: dict[str, asyncio.Task[int | None]] = {}

    async def load_limit(self) -> None:
        """Read `max_model_len` for the local model from `/v1/models`; unknown until the server says."""
        try:
            async with asyncio.timeout(self._local.timeouts.first_byte_s):
                response = await self._client.get(self._local.base_url + "/models")
            entries = response.json().get("data", []) if response.status_code == 200 else []
        except (httpx.HTTPError, TimeoutError, ValueError, AttributeError):
            return
        mine = [e for e in entries if isinstance(e, dict) and e.get("id") == self._local.model]
        if mine and isinstance(mine[0].get("max_model_len"), int):
            self.max_model_len = mine[0]["max_model_len"]
            return
        log.warning("the local server does not list model %r with a max_model_len", self._local.model)

    async def check(self, messages: Any, max_tokens: int | None) -> Fit:
        """Fit or not; unknown when the server cannot count these messages. Raises PrecheckUnreachable."""
        if not isinstance(messages, list):
            return Fit(None)  # not a chat the server can count; the route will answer the client's error
        prompt = await self._count(messages)     # first: an unreachable server fails here, once
        if prompt is not None and self.max_model_len is None:
            await self.load_limit()
        if prompt is None or self.max_model_len is None:
            return Fit(None)
        return Fit(not too_long(prompt, max_tokens, self.max_model_len), prompt, max_tokens, self.max_model_len)

    async def _count(self, messages: list[Any]) -> int | None:
        """The prompt's token count: cached, and asked once for a burst of identical prompts (a load test's)."""
        key = hashlib.sha256(json.dumps(messages, sort_keys=True, default=str).encode()).hexdigest()
        if key in self._counts:
            self._counts.move_to_end(key)
            return self._counts[key]
        pending = self._pending.get(key)
        if pending is None:
            pending = self._pending[key] = asyncio.create_task(self._tokenize(key, messages))
            pending.add_done_callback(lambda _: self._pending.pop(key, None))
        return await asyncio.shield(pending)

    async def _tokenize(self, key: str, messages: list[Any]) -> int | None:
        timeouts = self._local.timeouts
        try:
            async with asyncio.timeout(timeouts.first_byte_s):
                response = await self._client.post(self._local.server_url + "/tokenize",
                                                   json={"model": self._local.model, "messages": messages})
        except TimeoutError:
            raise PrecheckUnreachable(f"/tokenize gave no answer within first_byte_s={timeouts.first_byte_s:g} s") \
                from None
        except httpx.TimeoutException as exc:
            raise PrecheckUnreachable(f"/tokenize timed out ({type(exc).__name__})") from None
        except httpx.TransportError as exc:
            raise PrecheckUnreachable(f"/tokenize could not connect: {type(exc).__name__}: {exc}") from None
        try:
            body = response.json() if response.status_code == 200 else {}
        except ValueError:
            body = {}
        count = body.get("count") if isinstance(body, dict) else None
        if not isinstance(count, int):
            if not 400 <= response.status_code < 500:  # a 4xx is the client's bad input; the route will say so
                log.warning("local /tokenize answered %s without a count; no context check", response.status_code)
            return None
        if isinstance(body.get("max_model_len"), int):
            self.max_model_len = body["max_model_len"]
        self._counts[key] = count
        if len(self._counts) > CACHE_SIZE:
            self._counts.popitem(last=False)
        return count
