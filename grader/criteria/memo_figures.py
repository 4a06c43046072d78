"""How the memo's checks read a front-matter figure, and what a broken rule says.

A figure's value is a number only when it is a finite int or float (YAML's `true` is not 1); a speed
is a token rate by its unit; and the memo's own sizing (`sizing_inputs`) says which aggregate
throughput it was run with and how many streams share it.
"""

from __future__ import annotations

import math
import re
from dataclasses import asdict, dataclass
from typing import Any

__all__ = ["TOKEN_RATE", "BrokenRule", "Sized", "is_number", "is_token_rate", "sized_by"]

TOKEN_RATE = re.compile(r"(tok(en)?s?\s*/\s*s(ec)?\b|tok(en)?s?\s+per\s+second)", re.IGNORECASE)


@dataclass(frozen=True)
class BrokenRule:
    """One broken rule: which, on which figure (None for the memo as a whole), and why."""

    rule: str
    figure: str | None
    message: str
    severity: str = "error"
    line: int | None = None  # 1-based line of the memo the finding quotes
    quote: str = ""

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


def is_token_rate(fig: dict[str, Any]) -> bool:
    return isinstance(fig.get("unit"), str) and bool(TOKEN_RATE.search(fig["unit"]))


@dataclass(frozen=True)
class Sized:
    """The aggregate throughput the memo's sizing was run with (`sizing_inputs`), and the streams it was at."""

    throughput: float
    streams: int | None  # `concurrency`; None when the memo does not state it

    def shared(self, value: Any) -> bool:
        """`value` is this aggregate while more than one stream shares it: no user sees it."""
        return (
            self.streams is not None and self.streams > 1 and is_number(value) and math.isclose(value, self.throughput)
        )

    def alone(self, value: Any) -> bool:
        """`value` is this aggregate at one stream: that one user's speed, rightly."""
        return self.streams == 1 and is_number(value) and math.isclose(value, self.throughput)


def sized_by(inputs: Any) -> Sized | None:
    if not isinstance(inputs, dict) or not is_number(inputs.get("throughput")):
        return None
    streams = inputs.get("concurrency")
    ok = isinstance(streams, int) and not isinstance(streams, bool) and streams >= 1
    return Sized(float(inputs["throughput"]), streams if ok else None)
