"""A check's answer, and the rule that turns a near-tolerance answer into a rerun.

A timing check reports its `margin`: the worst error it saw divided by its tolerance. Well inside
(< 0.7) or well outside (> 1.5) the answer stands. In between it is borderline: the criterion is
run once more, and if it is borderline again it is `inconclusive` (no points, flagged for a
person) rather than a guessed pass or fail.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from grader.outcome import Evidence

__all__ = ["BORDERLINE", "Verdict", "is_borderline", "within"]

BORDERLINE = (0.7, 1.5)


@dataclass
class Verdict:
    passed: bool
    output: str
    fraction: float | None = None  # a partial score in [0, 1]; None means all (passed) or nothing
    margin: float | None = None  # worst error / tolerance, for timing checks
    evidence: Evidence = field(default_factory=Evidence)

    @property
    def score_fraction(self) -> float:
        if self.fraction is not None:
            return self.fraction
        return 1.0 if self.passed else 0.0


def is_borderline(verdict: Verdict) -> bool:
    low, high = BORDERLINE
    return verdict.margin is not None and low <= verdict.margin <= high


def within(error: float, expected: float, *, abs_s: float | None = None, rel: float | None = None) -> float:
    """The error as a fraction of the allowed error (<= 1 passes): abs and rel tolerances add up."""
    allowed = (abs_s or 0.0) + (rel or 0.0) * abs(expected)
    if allowed <= 0:
        return 0.0 if error == 0 else float("inf")
    return abs(error) / allowed
