"""The hosted-API persona: bearer-key auth, a price table, rate limits and usage on every answer.

It wraps the same engine as the local persona (so latency, faults and the ledger work the same)
and adds what a paid API does around it:

* 401 without `Authorization: Bearer KEY`, or with a key other than `--api-key` when one is set;
* requests-per-minute and tokens-per-minute limits per key over a sliding 60 s window, where a
  request costs its prompt tokens plus `max_tokens` up front (as the gateway card of the seed
  describes); over a limit, 429 with `Retry-After` in whole seconds until the window has room;
* the price of every request in the ledger (`cost_usd`): prompt tokens at `price_input` plus
  completion tokens at `price_output`, per million, charged for what was generated even when the
  client went away mid-stream;
* `x-ratelimit-*` headers on accepted requests, and the price table in `/v1/models` (`pricing`).
"""

from __future__ import annotations

import hmac
import math
import time
from collections import deque

from starlette.requests import Request
from starlette.responses import JSONResponse, Response

from fake_server.engine.ledger import LedgerRecord
from fake_server.settings import ServerSettings

__all__ = ["API_DEFAULTS", "ApiPersona"]

# What `--persona api` changes before a scenario file and flags are applied: a hosted API has
# no slot limit a client could notice, and its own model name.
API_DEFAULTS = {"served_model_name": ["opus-5.5"], "max_num_seqs": 4096, "kv_cache_tokens": 8_388_608}


def _openai_error(status: int, message: str, type_: str, code: str) -> JSONResponse:
    return JSONResponse({"error": {"message": message, "type": type_, "param": None, "code": code}}, status_code=status)


def _key(request: Request) -> str:
    auth = request.headers.get("authorization", "")
    return auth[7:].strip() if auth.lower().startswith("bearer ") else ""


class _Window:
    """Amounts spent in the last 60 seconds."""

    def __init__(self) -> None:
        self.events: deque[tuple[float, int]] = deque()
        self.total = 0

    def _expire(self, now: float) -> None:
        while self.events and self.events[0][0] <= now - 60.0:
            self.total -= self.events.popleft()[1]

    def room(self, now: float, amount: int, limit: int) -> float:
        """0 if `amount` fits under `limit` now, else seconds until it will."""
        self._expire(now)
        if self.total + amount <= limit:
            return 0.0
        needed, freed = self.total + amount - limit, 0
        for t, spent in self.events:
            freed += spent
            if freed >= needed:
                return t + 60.0 - now
        return 60.0

    def add(self, now: float, amount: int) -> None:
        self.events.append((now, amount))
        self.total += amount


class ApiPersona:
    def __init__(self, settings: ServerSettings) -> None:
        self.settings = settings
        self._requests: dict[str, _Window] = {}
        self._tokens: dict[str, _Window] = {}

    def reset(self) -> None:
        """Forget every key's rate-limit window (part of /admin/reset)."""
        self._requests.clear()
        self._tokens.clear()

    def authenticate(self, request: Request) -> Response | None:
        """401 unless the request carries an acceptable key; checked before anything else."""
        s = self.settings
        key = _key(request)
        if not key:
            return _openai_error(
                401,
                "You didn't provide an API key. Send it as 'Authorization: Bearer YOUR_KEY'.",
                "invalid_request_error",
                "missing_api_key",
            )
        if s.api_key is not None and not hmac.compare_digest(key.encode(), s.api_key.encode()):
            shown = key[:3] + "*" * max(0, len(key) - 7) + key[-4:] if len(key) > 8 else "*" * len(key)
            return _openai_error(
                401, f"Incorrect API key provided: {shown}.", "invalid_request_error", "invalid_api_key"
            )
        return None

    def admit(self, request: Request, record: LedgerRecord, max_tokens: int) -> Response | None:
        """Rate limits, once the request's token cost is known."""
        s = self.settings
        key = _key(request)
        now = time.monotonic()
        cost = record.prompt_tokens + max_tokens
        requests = self._requests.setdefault(key, _Window())
        tokens = self._tokens.setdefault(key, _Window())
        wait_requests = requests.room(now, 1, s.rpm) if s.rpm else 0.0
        wait_tokens = tokens.room(now, cost, s.tpm) if s.tpm else 0.0
        if s.tpm and cost > s.tpm:
            return _openai_error(
                429,
                f"Request too large: {cost} tokens (prompt + max_tokens) exceeds the limit of "
                f"{s.tpm} tokens per minute.",
                "tokens",
                "rate_limit_exceeded",
            )
        if wait_requests or wait_tokens:
            wait = max(wait_requests, wait_tokens)
            kind = "requests" if wait_requests >= wait_tokens else "tokens"
            limit = f"{s.rpm} requests" if kind == "requests" else f"{s.tpm} tokens"
            response = _openai_error(
                429,
                f"Rate limit reached: {limit} per minute. Please try again in {wait:.1f}s.",
                kind,
                "rate_limit_exceeded",
            )
            response.headers["Retry-After"] = str(max(1, math.ceil(wait)))
            return response
        requests.add(now, 1)
        tokens.add(now, cost)
        return None

    def headers(self, record: LedgerRecord) -> list[tuple[bytes, bytes]]:
        s = self.settings
        out = []
        if s.rpm:
            out.append((b"x-ratelimit-limit-requests", str(s.rpm).encode()))
        if s.tpm:
            out.append((b"x-ratelimit-limit-tokens", str(s.tpm).encode()))
        return out

    def on_finish(self, record: LedgerRecord) -> None:
        s = self.settings
        record.cost_usd = (record.prompt_tokens * s.price_input + record.completion_tokens * s.price_output) / 1e6

    def pricing(self) -> dict[str, float]:
        return {
            "input_per_million_usd": self.settings.price_input,
            "output_per_million_usd": self.settings.price_output,
        }
