"""What really happened to each request, read from a fake server's ledger.

The ledger stamps every chunk with the time its write to the socket returned, in the same clock
as a client's `time.time()`, so these figures are what a perfect client on the same machine would
have measured, give or take the loopback's fraction of a millisecond:

    TTFT      arrival -> the first chunk that carried content tokens
    tokens    completion tokens minus reasoning tokens (what usage tells the client); from a server that
              sends no usage, the non-empty content chunks (what a client can count)
    TPS       tokens / (last content chunk - first content chunk), None with fewer than 2 such chunks
    outcome   ok | empty | failed, and which failure reasons a correct client may report
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

__all__ = ["FAILURE_REASONS", "Truth", "in_flight_series", "max_in_flight", "nearest_rank", "truth_of"]

# Which `failure` values a correct load generator may report for each fault kind. A stall fails a request when
# it outlasts the client's timeout (truth_of's `timeout_s`), or when its client gave up on it: a stream that
# waited out a stall shorter than the timeout and ended with [DONE] is ok.
FAILURE_REASONS: dict[str, frozenset[str]] = {
    "http_error": frozenset({"http_status"}),
    "cut": frozenset({"connection", "no_done"}),
    "no_done": frozenset({"no_done"}),
    "stream_error": frozenset({"stream_error"}),
    "malformed_chunk": frozenset({"malformed"}),
    "stall_before_headers": frozenset({"timeout"}),
    "stall_after_headers": frozenset({"timeout"}),
}


_STALLS = frozenset({"stall_before_headers", "stall_after_headers"})


@dataclass(frozen=True)
class Truth:
    id: str
    number: int
    status: int
    arrival: float
    end: float  # when the last chunk (or the error answer) was sent
    outcome: str  # ok | empty | failed
    reasons: frozenset[str]  # failure reasons a correct client may report (empty unless failed)
    ttft_s: float | None
    first_content: float | None  # when the first content chunk was sent (ok requests)
    tokens: int
    tps: float | None
    fault: str | None
    reasoning_tokens: int = 0  # what the model spent thinking (never output tokens)
    usage: bool = True  # its server sent usage (else its tokens are its non-empty content deltas)


def truth_of(record: dict[str, Any], timeout_s: float | None = None, *, usage: bool = True) -> Truth:
    """The truth about one ledger record (a `LedgerRecord.to_dict()`), for a client that gives up on a request
    after `timeout_s` (None: one that waits as long as it takes), from a server that sends the usage a client
    asks for (`usage`; False: a server that ignores `stream_options`, whose streams carry none)."""
    chunks = record.get("chunks") or []
    content = [t for t, kind, tokens in chunks if kind == "content" and tokens > 0]
    fault = record.get("fault") or {}
    applied = fault.get("kind") if fault.get("applied", True) else None
    kinds = [kind for _, kind, _ in chunks]
    status = int(record.get("status") or 200)
    end = chunks[-1][0] if chunks else (record.get("finished") or record["arrival"])
    if status != 200:
        outcome, reasons = "failed", frozenset({"http_status"})
    elif applied in _STALLS and timeout_s is not None:  # the client's timeout decides, whatever the client did
        timed_out = float(fault.get("seconds") or 0.0) > timeout_s
        outcome, reasons = ("failed", FAILURE_REASONS[applied]) if timed_out else ("ok", frozenset())
    elif (
        (applied in FAILURE_REASONS and not (applied in _STALLS and "done" in kinds))
        or "done" not in kinds
        or record.get("finish_reason") in ("abort", "error")
    ):
        outcome, reasons = "failed", FAILURE_REASONS.get(applied or "", frozenset({"connection", "no_done"}))
    elif not content:
        outcome, reasons = "empty", frozenset()
    else:
        outcome, reasons = "ok", frozenset()
    ok = outcome == "ok"
    seen = ok and bool(content)  # an ok request its client left early (a stall within its timeout) has none
    # Output tokens as the brief defines them: from usage, or, from a server that sends none, one per non-empty
    # content delta (a client cannot know more). The brief has every client ask for usage, so a client that did
    # not is judged by what usage would have said.
    if not ok:
        tokens = 0
    elif usage:
        tokens = int(record.get("completion_tokens", 0)) - int(record.get("reasoning_tokens", 0))
    else:
        tokens = len(content)
    span = content[-1] - content[0] if len(content) >= 2 else 0.0
    return Truth(
        id=record["id"],
        number=int(record["number"]),
        status=status,
        arrival=float(record["arrival"]),
        end=float(end),
        outcome=outcome,
        reasons=reasons,
        ttft_s=content[0] - record["arrival"] if seen else None,
        first_content=content[0] if seen else None,
        tokens=tokens,
        tps=tokens / span if ok and span > 0 else None,
        fault=applied,
        reasoning_tokens=int(record.get("reasoning_tokens") or 0),
        usage=usage,
    )


def nearest_rank(values: list[float], p: float) -> float | None:
    """The p-th percentile by nearest rank (rank = ceil(p/100 * n), 1-based), None for no values.

    Integer arithmetic for the rank: in floats 7/100 * 100 is 7.000000000000001, whose ceiling is 8.
    """
    ordered = sorted(values)
    if not ordered:
        return None
    hundredths = round(p * 100)  # p to two decimals, as an integer number of hundredths
    rank = -(-hundredths * len(ordered) // 10_000)
    return ordered[max(rank, 1) - 1]


def in_flight_series(intervals: list[tuple[float, float]]) -> list[tuple[float, int]]:
    """(time, requests in flight from then on) at every arrival and end, in time order.

    An end sorts before an arrival at the same instant: a client that sends its next request the
    moment it reads the last one's final chunk never had both in flight.
    """
    events = sorted(
        [(start, 1) for start, _ in intervals] + [(end, -1) for _, end in intervals], key=lambda e: (e[0], e[1])
    )
    series, level = [], 0
    for t, step in events:
        level += step
        series.append((t, level))
    return series


def max_in_flight(intervals: list[tuple[float, float]]) -> int:
    return max((level for _, level in in_flight_series(intervals)), default=0)
