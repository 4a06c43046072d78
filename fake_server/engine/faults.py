"""The fault plane: rules that make chosen requests fail in a chosen way.

A rule names a `kind` and selects requests by one of
  `every: true` (the default), `requests: [k, ...]` (1-based arrival numbers on this server),
  or `rate: p` (each request independently, seeded, so a run is repeatable),
optionally only for one `model`. Rules are tried in order and the first that selects a request
applies to it; the ledger records which.

Each kind is declared once, in `KINDS` below: what a plain client sees and the rule fields it reads.
Each field says what it does in its own `help`. `fake-server faults` prints both (fake_server/manual.py),
so the candidate's manual is this code.

A client that gives up during a stall ends it: the request is aborted at the disconnect (as vLLM
cancels the handler of a client that has gone), so its ledger record ends when the client left.

Faults that act "after `after_tokens` tokens" are applied by the engine, at the moment it would
generate token `after_tokens + 1`, and nowhere else: exactly `after_tokens` tokens are generated
before the fault (fewer if the answer ends first). Those that end the generation (cut, no_done,
stream_error) end it there, so usage, the ledger's `completion_tokens` and `cost_usd` count
exactly the tokens the fault let through, however late the writer runs. stall and
malformed_chunk do not change what is generated: the whole answer is billed.
"""

from __future__ import annotations

import zlib
from dataclasses import asdict, dataclass, field
from typing import Any

from fake_server.errors import SettingsError

__all__ = ["FAULT_KINDS", "KINDS", "SELECTION", "FaultKind", "FaultPlan", "FaultRule", "parse_rules"]


@dataclass(frozen=True)
class FaultKind:
    """One kind of fault: what a plain client sees, and the rule fields it reads besides the selection."""

    name: str
    effect: str
    params: tuple[str, ...]
    selects: bool = True  # False: it changes the server, not requests (`unhealthy`)


KINDS = (
    FaultKind(
        "http_error",
        "`status` (4xx/5xx) with an OpenAI-style error body, before any stream; 429 and 503 carry `Retry-After`",
        ("status", "message", "retry_after"),
    ),
    FaultKind("stall_before_headers", "nothing at all for `seconds`, then the normal response", ("seconds",)),
    FaultKind(
        "stall_after_headers", "200 and headers at once, then nothing for `seconds`, then the stream", ("seconds",)
    ),
    FaultKind(
        "stall", "after `after_tokens` tokens the stream stops for `seconds`, then resumes", ("after_tokens", "seconds")
    ),
    FaultKind("cut", "after `after_tokens` tokens the connection is closed mid-body (no [DONE])", ("after_tokens",)),
    FaultKind("no_done", "after `after_tokens` tokens the body ends cleanly but without [DONE]", ("after_tokens",)),
    FaultKind(
        "stream_error",
        'after `after_tokens` tokens, `data: {"error": ...}` (`status`, `message`) then `data: [DONE]`; '
        "a non-streamed answer is that error",
        ("after_tokens", "status", "message"),
    ),
    FaultKind(
        "malformed_chunk",
        "after `after_tokens` tokens, one `data:` line that is not JSON, then the rest",
        ("after_tokens",),
    ),
    FaultKind(
        "engine_crash",
        "after `after_tokens` tokens the model's engine step raises: every request of that engine ends with an "
        "error, and `/health` answers 503 until a reset",
        ("after_tokens",),
    ),
    FaultKind("unhealthy", "`/health` answers 503 while the rule is set", (), selects=False),
    FaultKind(
        "health_stall",
        "`/health` answers only after `seconds` while the rule is set (a probe without a timeout waits that long)",
        ("seconds",),
        selects=False,
    ),
    FaultKind(
        "tokenize_error",
        "`POST /tokenize` answers `status` with an OpenAI-style error body (`message`) while the rule is set",
        ("status", "message"),
        selects=False,
    ),
)
FAULT_KINDS = tuple(k.name for k in KINDS)
#: The rule fields that choose which requests a kind acts on (one of every, requests, rate; and model).
SELECTION = ("every", "requests", "rate", "model")
# Kinds that act on an endpoint other than generation, so select no request.
_ENDPOINT_KINDS = {k.name for k in KINDS if not k.selects}
# Kinds that act once the response has started (the rest act before it, or not on requests).
_STREAM_KINDS = {"stall_after_headers", "stall", "cut", "no_done", "stream_error", "malformed_chunk", "engine_crash"}
# Kinds the engine applies at generated token `after_tokens` (those that read it), and those of them that end generation.
_AT_TOKEN_KINDS = {k.name for k in KINDS if "after_tokens" in k.params}
_ENDING_KINDS = {"cut", "no_done", "stream_error"}


def _field(default: Any, help: str) -> Any:
    return field(default=default, metadata={"help": help})


@dataclass(frozen=True)
class FaultRule:
    kind: str = field(metadata={"help": "which fault: one of the kinds"})
    status: int = _field(500, "the HTTP status, 400-599: of an `http_error`, or in a `stream_error`'s error")
    message: str | None = _field(None, "the error's message (left out: a message naming the fault)")
    retry_after: float | None = _field(
        None, "seconds, >= 0, in an `http_error`'s `Retry-After` header (429 and 503 send 1 when left out)"
    )
    seconds: float = _field(0.0, "how long a stall holds, in seconds, >= 0")
    after_tokens: int = _field(0, "tokens generated and sent before the fault acts (a whole number, >= 0)")
    every: bool | None = _field(False, "true: every request (what a rule selects when it gives no selection)")
    requests: tuple[int, ...] = _field(
        (), "a list of request numbers (1-based arrival order on this server, from its last reset)"
    )
    rate: float | None = _field(None, "each request with this probability, 0-1, seeded by `--seed` (repeatable)")
    model: str | None = _field(None, "only requests for this served model name")

    def selects(self, number: int, model: str, seed: int, index: int) -> bool:
        if self.kind in _ENDPOINT_KINDS or (self.model is not None and self.model != model):
            return False
        if self.requests or self.every is None:
            return number in self.requests
        if self.rate is not None:
            draw = zlib.crc32(f"{seed}:{index}:{number}".encode()) / 2**32
            return draw < self.rate
        return True

    @property
    def in_stream(self) -> bool:
        return self.kind in _STREAM_KINDS

    @property
    def at_token(self) -> bool:
        """Applied by the engine when it is about to generate token `after_tokens + 1`."""
        return self.kind in _AT_TOKEN_KINDS

    @property
    def ends_generation(self) -> bool:
        return self.kind in _ENDING_KINDS

    def tokens_before(self, output: int, n: int) -> int:
        """Of the next n tokens of a sequence that has generated `output`, how many come before
        this fault acts: it acts when token `after_tokens + 1` is next, so exactly `after_tokens`
        tokens are generated, sent and billed before it (n when it does not act within them)."""
        gap = self.after_tokens - output
        return gap if 0 <= gap < n else n

    @property
    def finish_reason(self) -> str | None:
        """How a sequence ends when this fault acts on its generation (None: it goes on)."""
        if not self.ends_generation:
            return None
        return "error" if self.kind == "stream_error" else "abort"

    def describe(self) -> dict[str, Any]:
        """The rule as the ledger and /admin/faults show it: only what differs from defaults."""
        base = FaultRule(kind=self.kind)
        out = {k: v for k, v in asdict(self).items() if v != getattr(base, k) or k == "kind"}
        if self.every is None:
            out.pop("every")
            out["requests"] = list(self.requests)
        return out


_NUMERIC = {"status": int, "retry_after": float, "seconds": float, "after_tokens": int, "rate": float}


def _parse_rule(raw: Any, where: str) -> FaultRule:
    if not isinstance(raw, dict):
        raise SettingsError(f"{where}: a fault rule must be a mapping (got {raw!r})")
    known = set(FaultRule.__dataclass_fields__)
    unknown = sorted(set(map(str, raw)) - known)
    if unknown:
        raise SettingsError(f"{where}: unknown fault field(s) {', '.join(unknown)} (known: {', '.join(sorted(known))})")
    kind = raw.get("kind")
    if kind not in FAULT_KINDS:
        raise SettingsError(f"{where}.kind: must be one of {', '.join(FAULT_KINDS)} (got {kind!r})")
    values: dict[str, Any] = {"kind": kind}
    for key, cast in _NUMERIC.items():
        if key in raw and raw[key] is not None:
            value = raw[key]
            if isinstance(value, bool) or not isinstance(value, (int, float)) or value < 0:
                raise SettingsError(f"{where}.{key}: must be a non-negative number (got {value!r})")
            if cast is int and not float(value).is_integer():
                raise SettingsError(f"{where}.{key}: must be a whole number (got {value!r})")
            values[key] = cast(value)
    if not 400 <= values.get("status", 500) <= 599:
        raise SettingsError(f"{where}.status: must be a 4xx or 5xx status (got {values.get('status')})")
    if "rate" in values and values["rate"] > 1:
        raise SettingsError(f"{where}.rate: must be between 0 and 1 (got {values['rate']})")
    if "message" in raw:
        if not isinstance(raw["message"], str):
            raise SettingsError(f"{where}.message: must be a string")
        values["message"] = raw["message"]
    if "model" in raw:
        if not isinstance(raw["model"], str):
            raise SettingsError(f"{where}.model: must be a model name")
        values["model"] = raw["model"]
    if "every" in raw:
        if not isinstance(raw["every"], bool):
            raise SettingsError(f"{where}.every: must be true or false")
        values["every"] = raw["every"]
    if "requests" in raw:
        reqs = raw["requests"]
        if isinstance(reqs, int) and not isinstance(reqs, bool):
            reqs = [reqs]
        if not isinstance(reqs, list) or not all(
            isinstance(r, int) and not isinstance(r, bool) and r >= 1 for r in reqs
        ):
            raise SettingsError(f"{where}.requests: must be a list of request numbers >= 1 (got {raw['requests']!r})")
        values["requests"] = tuple(reqs)
        values["every"] = None
    chosen = sum(key in raw for key in ("every", "requests", "rate"))
    if chosen > 1:
        raise SettingsError(f"{where}: choose one of every, requests, rate")
    if raw.get("every") is False and chosen == 1:
        raise SettingsError(f"{where}.every: false selects nothing; give `requests` or `rate` instead")
    return FaultRule(**values)


def parse_rules(raw: Any, where: str = "faults") -> list[FaultRule]:
    if raw is None:
        return []
    if not isinstance(raw, list):
        raise SettingsError(f"{where}: must be a list of fault rules")
    return [_parse_rule(item, f"{where}[{i}]") for i, item in enumerate(raw)]


@dataclass
class FaultPlan:
    """The live list of rules of one server, consulted once per request."""

    rules: list[FaultRule] = field(default_factory=list)
    seed: int = 0

    def pick(self, number: int, model: str) -> FaultRule | None:
        for index, rule in enumerate(self.rules):
            if rule.selects(number, model, self.seed, index):
                return rule
        return None

    @property
    def unhealthy(self) -> bool:
        return any(rule.kind == "unhealthy" for rule in self.rules)

    @property
    def health_stall(self) -> float:
        """How long `/health` waits before it answers (0: it answers at once)."""
        return max((rule.seconds for rule in self.rules if rule.kind == "health_stall"), default=0.0)

    @property
    def tokenize_error(self) -> FaultRule | None:
        """The rule that makes `/tokenize` answer an error, if any."""
        return next((rule for rule in self.rules if rule.kind == "tokenize_error"), None)
