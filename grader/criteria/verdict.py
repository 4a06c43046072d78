"""A check's answer, and the rule that turns a near-tolerance answer into a rerun.

A timing check reports its `margin`: the worst error it saw divided by its tolerance. Well inside
or well outside the rubric's `judging.borderline` band (0.7-1.5) the answer stands. In between it
is borderline: the criterion is run once more, and if it is borderline again it is `inconclusive`
(no points, flagged for a person) rather than a guessed pass or fail.

On a machine seen to be too busy to keep time (`busy`: the fake servers' own steps ran late, a task
waited for a core through much of the run, or a state the grader waited for was never seen), the
`judging.busy_borderline` band applies instead (1-8): a busy machine only ever makes a client late, so
an answer within the tolerance stands, while an error that would stand on a quiet machine may be the
machine's, not the candidate's, and earns a rerun. Every scenario is sized so the defect it looks for
moves its figure by at least ten times the tolerance: past the band, a fail stands busy or not. A
check whose answer depends on such a state without any margin says so with margin 1.0. A command stopped at
its limit after its server had finished every request (its start or exit was late, not its requests) says
so with margin LATE_EXIT_MARGIN: past the quiet band, so it fails on a quiet machine, and inside the busy
one, so on a busy machine it is run again and left to a person if the machine stays busy.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, replace

from grader.outcome import Evidence

__all__ = [
    "LATE_EXIT_MARGIN",
    "UNSEEN_FAILED",
    "UNSEEN_PASSED",
    "Verdict",
    "is_borderline",
    "lone_outlier",
    "toward_bound",
    "with_unseen",
    "within",
]

LATE_EXIT_MARGIN = 2.0  # see above: a fail on a quiet machine, a rerun on a busy one

#: What a candidate is told of the unseen variants (rubric/variants.py): whether they passed, nothing more.
UNSEEN_PASSED = "Unseen variants of its scenarios (other settings within the documented ranges): passed."
UNSEEN_FAILED = (
    "Unseen variants of its scenarios (other settings within the documented ranges): FAILED; the "
    "hiring team's report shows where."
)


@dataclass
class Verdict:
    passed: bool
    output: str
    fraction: float | None = None  # a partial score in [0, 1]; None means all (passed) or nothing
    margin: float | None = None  # worst error / tolerance, for timing checks
    evidence: Evidence = field(default_factory=Evidence)
    busy: str | None = None  # why the machine was too busy to trust this check's timing, if it was
    unseen: Verdict | None = None  # the same check on the unseen variants' runs, when there were any
    margins: tuple[float, ...] = ()  # each request's margin, from a check of request by request (see lone_outlier)
    closest: str = ""  # the closest call a timing check saw, in one line with its limit, pass or fail
    outlier_alone: bool = False  # failed by one request alone, every other well within: the machine's, most likely

    @property
    def score_fraction(self) -> float:
        if self.fraction is not None:
            return self.fraction
        return 1.0 if self.passed else 0.0


def with_unseen(public: Verdict, unseen: Verdict) -> Verdict:
    """One verdict from the public runs' and the unseen variants': passed only if both passed, the lower score,
    the wider margin. Its output is the public one and a line that names no variant; `unseen` keeps the rest."""
    margins = [m for m in (public.margin, unseen.margin) if m is not None]
    fractions = (public.score_fraction, unseen.score_fraction)
    return Verdict(
        passed=public.passed and unseen.passed,
        output=public.output + "\n" + (UNSEEN_PASSED if unseen.passed else UNSEEN_FAILED),
        fraction=min(fractions) if public.fraction is not None or unseen.fraction is not None else None,
        margin=max(margins) if margins else None,
        evidence=public.evidence,
        busy=public.busy or unseen.busy,
        unseen=unseen,
        closest=public.closest,  # an unseen variant's closest call would name what the candidate never saw
    )


def lone_outlier(verdict: Verdict, others: float) -> Verdict:
    """A check of request by request failed by one request alone, every other within `others` of its
    tolerance, is borderline (margin 1.0): one client thread descheduled on a busy machine reads one
    stream late, while a wrong definition puts every request off. Run again, such an answer passes (the rerun
    within its tolerance, grading/judging.py), or is borderline twice and `inconclusive`; it is never a fail."""
    margins = sorted(verdict.margins)
    if verdict.passed or len(margins) < 4 or margins[-1] <= 1 or margins[-2] > others:
        return verdict
    note = f"one request alone is outside the tolerance, every other within {others:g} of it: judged again"
    return replace(verdict, margin=1.0, output=f"{verdict.output}\n{note}", outlier_alone=True)


def is_borderline(verdict: Verdict, quiet: tuple[float, float], busy: tuple[float, float]) -> bool:
    """Whether the margin falls in the band that earns a rerun: `busy` when the machine was, else `quiet`."""
    low, high = busy if verdict.busy else quiet
    return verdict.margin is not None and low <= verdict.margin <= high


def toward_bound(value: float, target: float, low: float, high: float) -> float:
    """A value's margin on a two-sided band around `target`: how far it lies from the target toward the bound on
    its side, as a share of that distance (0 on the target, 1 on the bound, above 1 outside). Measured on a log
    scale, so a band given as ratios of the target (0.6x to 1.6x) is read the same on both sides."""
    if value <= 0 or target <= 0 or not low < target < high:
        return float("inf") if value <= 0 else abs(value - target) / max(abs(high - low), 1e-12)
    bound = high if value >= target else low
    return abs(math.log(value / target)) / abs(math.log(bound / target))


def within(error: float, expected: float, *, abs_s: float | None = None, rel: float | None = None) -> float:
    """The error as a fraction of the allowed error (<= 1 passes): abs and rel tolerances add up."""
    allowed = (abs_s or 0.0) + (rel or 0.0) * abs(expected)
    if allowed <= 0:
        return 0.0 if error == 0 else float("inf")
    return abs(error) / allowed
