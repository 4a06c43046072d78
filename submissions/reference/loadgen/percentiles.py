"""Nearest-rank percentiles, with the sample size that makes them honest.

Nearest rank: sort ascending, take the value at rank ceil(p/100 * n) (1-based). Every result is a
value that was really measured. Linear interpolation (numpy's default) invents values between two
samples and, with few samples, reports a p99 below the slowest request; with n < 100 the nearest-
rank p99 *is* the slowest request, so the report says so (`p99_is_max`).
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import asdict, dataclass
from fractions import Fraction
from typing import Any

__all__ = ["nearest_rank", "Percentiles", "percentiles"]


def nearest_rank(values: Iterable[float], p: float) -> float | None:
    """The p-th percentile (0 < p <= 100) by nearest rank, or None when there are no values.

    The rank is computed in exact arithmetic: in floats, 7/100 * 100 is 7.000000000000001 and
    its ceiling would be rank 8.
    """
    if not 0 < p <= 100:
        raise ValueError(f"percentile must be in (0, 100], got {p}")
    ordered = sorted(values)
    if not ordered:
        return None
    rank = math.ceil(Fraction(str(p)) * len(ordered) / 100)
    return ordered[max(rank, 1) - 1]


@dataclass(frozen=True)
class Percentiles:
    """The contract's percentile object: all values None when n is 0."""

    n: int
    p50: float | None
    p90: float | None
    p99: float | None
    max: float | None
    p99_is_max: bool  # true when n < 100: the p99 is then the slowest sample and must be labelled so

    def to_contract(self) -> dict[str, Any]:
        return asdict(self)


def percentiles(values: Iterable[float]) -> Percentiles:
    ordered = sorted(values)
    return Percentiles(
        n=len(ordered),
        p50=nearest_rank(ordered, 50),
        p90=nearest_rank(ordered, 90),
        p99=nearest_rank(ordered, 99),
        max=ordered[-1] if ordered else None,
        p99_is_max=len(ordered) < 100,
    )
