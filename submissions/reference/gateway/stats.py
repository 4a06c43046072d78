"""What each route did: attempts, failures, fallbacks, latency and cost, as `GET /stats` reports it.

Every attempt is counted when it is sent and finished exactly once, so a failed attempt is never
lost and never counted twice, and its cost (what the API billed) always lands on its route.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

__all__ = ["ROUTES", "Attempt", "RouteStats", "Stats", "nearest_rank", "percentiles"]

ROUTES = ("local", "api")
_PERCENTILES = (50, 90, 99)


def nearest_rank(ordered: list[float], p: int) -> float:
    """The p-th percentile by nearest rank: the value at rank ceil(p/100 * n), 1-based, of sorted values."""
    rank = max(1, -(-p * len(ordered) // 100))  # integer ceil: no float error at exact ranks
    return ordered[rank - 1]


def percentiles(values: list[float]) -> dict[str, Any]:
    """The contract's percentile object; with n < 100 the p99 is the maximum, and says so."""
    ordered = sorted(values)
    out: dict[str, Any] = {"n": len(ordered)}
    for p in _PERCENTILES:
        out[f"p{p}"] = nearest_rank(ordered, p) if ordered else None
    out["max"] = ordered[-1] if ordered else None
    out["p99_is_max"] = len(ordered) < 100
    return out


@dataclass
class RouteStats:
    requests: int = 0       # attempts sent to this route
    failures: int = 0       # attempts that did not deliver a whole, successful answer (4xx included)
    fallbacks: int = 0      # requests that went on to another route after this one failed
    cost_usd: float = 0.0
    latencies: list[float] = field(default_factory=list)  # successful attempts, request sent -> last byte

    def to_dict(self) -> dict[str, Any]:
        return {"requests": self.requests, "failures": self.failures, "fallbacks": self.fallbacks,
                "latency_s": percentiles(self.latencies), "cost_usd": self.cost_usd}


class Attempt:
    """One try of one route. The route ends it once: succeeded, failed, or abandoned by the client."""

    def __init__(self, route: RouteStats) -> None:
        self._route = route
        self.ended = False
        route.requests += 1

    def succeeded(self, latency_s: float, cost_usd: float = 0.0) -> None:
        if self._end(cost_usd):
            self._route.latencies.append(latency_s)

    def failed(self, cost_usd: float = 0.0) -> None:
        if self._end(cost_usd):
            self._route.failures += 1

    def abandoned(self, cost_usd: float = 0.0) -> None:
        """The client went away mid-answer: not the route's failure, and no latency to report."""
        self._end(cost_usd)

    def _end(self, cost_usd: float) -> bool:
        if self.ended:
            return False
        self.ended = True
        self._route.cost_usd += cost_usd
        return True


class Stats:
    """Per-route counters. One event loop owns them, so no lock is needed."""

    def __init__(self) -> None:
        self.routes = {name: RouteStats() for name in ROUTES}

    def begin(self, route: str) -> Attempt:
        return Attempt(self.routes[route])

    def fell_back(self, route: str) -> None:
        self.routes[route].fallbacks += 1

    def to_dict(self) -> dict[str, Any]:
        return {"contract": 4, "routes": {name: r.to_dict() for name, r in self.routes.items()}}
