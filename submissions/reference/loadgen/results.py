"""Results as dataclasses, and their export as the contract's results file.

Per request: outcome ok | empty | failed. Only ok requests give TTFT and TPS samples and output
tokens; a failed request's partial tokens and an empty request's missing TTFT never reach the
summary (counting them would flatter throughput or put zeros in the TTFT percentiles).
Throughput is the run's aggregate (all ok output tokens over the wall time), never one user's
speed; per-request TPS is the per-user figure.
"""

from __future__ import annotations

import json
import os
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .config import LoadConfig
from .percentiles import Percentiles, percentiles

__all__ = ["RequestResult", "RunResult", "CONTRACT", "OUTCOMES", "FAILURES"]

CONTRACT = 4
OUTCOMES = ("ok", "empty", "failed")
FAILURES = ("http_status", "no_done", "stream_error", "connection", "timeout", "malformed")


@dataclass
class RequestResult:
    index: int
    id: str | None  # the response id from the stream, None if none arrived
    outcome: str  # ok | empty | failed
    failure: str | None  # one of FAILURES when failed
    status: int | None  # HTTP status, None if no response
    ttft_s: float | None  # ok only
    output_tokens: int  # ok only; 0 otherwise
    tokens_from: str  # usage | content_deltas | none
    tps: float | None  # ok with a first-to-last content span only
    start: float  # epoch seconds when the request was sent
    end: float  # epoch seconds when the stream ended or failed
    # Not in the results file: for the table and for whoever reads the code.
    slot_wait_s: float = 0.0  # time waiting for a concurrency slot before sending (never in TTFT)
    message: str | None = None  # why it failed, in words

    def to_contract(self) -> dict[str, Any]:
        return {
            "index": self.index, "id": self.id, "outcome": self.outcome, "failure": self.failure,
            "status": self.status, "ttft_s": self.ttft_s, "output_tokens": self.output_tokens,
            "tokens_from": self.tokens_from, "tps": self.tps, "start": self.start, "end": self.end,
        }


@dataclass
class Summary:
    n: int
    counts: dict[str, int]
    ttft: Percentiles
    tps: Percentiles
    slot_wait: Percentiles
    output_tokens: int
    wall_s: float
    throughput: float  # aggregate output tokens per second of wall time

    def to_contract(self) -> dict[str, Any]:
        return {
            "n": self.n, **self.counts,
            "ttft_s": self.ttft.to_contract(), "tps": self.tps.to_contract(),
            "output_tokens": self.output_tokens, "wall_s": self.wall_s,
            "throughput_tokens_per_s": self.throughput,
        }


@dataclass
class RunResult:
    config: LoadConfig
    requests: list[RequestResult] = field(default_factory=list)

    def summary(self) -> Summary:
        ok = [r for r in self.requests if r.outcome == "ok"]
        tokens = sum(r.output_tokens for r in ok)
        wall = (max(r.end for r in self.requests) - min(r.start for r in self.requests)) if self.requests else 0.0
        return Summary(
            n=len(self.requests),
            counts={o: sum(1 for r in self.requests if r.outcome == o) for o in OUTCOMES},
            ttft=percentiles(r.ttft_s for r in ok if r.ttft_s is not None),
            tps=percentiles(r.tps for r in ok if r.tps is not None),
            slot_wait=percentiles(r.slot_wait_s for r in self.requests),
            output_tokens=tokens,
            wall_s=max(wall, 0.0),
            throughput=tokens / wall if wall > 0 else 0.0,
        )

    def to_contract(self) -> dict[str, Any]:
        return {
            "contract": CONTRACT,
            "config": self.config.to_contract(),
            "requests": [r.to_contract() for r in sorted(self.requests, key=lambda r: r.index)],
            "summary": self.summary().to_contract(),
        }

    def write(self, path: Path) -> None:
        """Write the results file whole or not at all (a temporary file, then a rename)."""
        text = json.dumps(self.to_contract(), indent=2) + "\n"
        fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent or Path("."))
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as out:
                out.write(text)
            os.chmod(tmp, 0o644)  # mkstemp makes it private; a results file is for others to read
            os.replace(tmp, path)
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise
