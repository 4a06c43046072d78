"""The criteria registry: every check declared once, by the rubric id it judges.

A check is a pure function of its section's run records (as facts) and its rubric entry: no I/O,
no clock, no servers. It names the deliverable whose facts it takes and the numbers it reads from
its entry's `tolerance`; loading a rubric fails, naming the criterion, when an entry has no check
or leaves out a number its check needs (grader/rubric/load.py, handed the checks by criteria/catalog.py).

    @check("loadgen", "loadgen.tps", needs=("rel",))
    def check_tps(runs: list[Observed], criterion: Criterion) -> Verdict: ...
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any, TypeVar

from grader.criteria.verdict import Verdict
from grader.rubric import Criterion

__all__ = ["ByRun", "Check", "check", "checks_so_far"]

Judge = Callable[[Any, Criterion], Verdict]
F = TypeVar("F", bound=Judge)


#: The problems one run gives a check that judges each run whole (its summary), not request by request.
ByRun = Callable[[Any, Criterion], list[str]]


@dataclass(frozen=True)
class Check:
    id: str
    deliverable: str
    judge: Judge
    needs: tuple[str, ...] = ()
    # A check of each run as a whole (its exit, its summary, its peak): what fails it is a run, not a request.
    # True: the check judges one run alone; a function: the problems one run gives it.
    by_run: ByRun | bool = False

    def run_problems(self, run: Any, criterion: Criterion) -> list[str] | None:
        """Why `run` fails this check on its own ([] when it does not); None for a check of request by request."""
        if self.by_run is False:
            return None
        if self.by_run is True:
            verdict = self.judge([run], criterion)
            return [] if verdict.passed else verdict.output.splitlines()
        return self.by_run(run, criterion)


_CHECKS: dict[str, Check] = {}


def check(deliverable: str, *ids: str, needs: tuple[str, ...] = (), by_run: ByRun | bool = False) -> Callable[[F], F]:
    """Register the decorated function as the check of each of `ids` (`by_run`: see Check)."""

    def register(judge: F) -> F:
        for criterion_id in ids:
            if criterion_id in _CHECKS:
                raise RuntimeError(f"{criterion_id}: a check is registered twice")
            _CHECKS[criterion_id] = Check(criterion_id, deliverable, judge, needs, by_run)
        return judge

    return register


def checks_so_far() -> Mapping[str, Check]:
    """The checks registered by the modules imported so far (criteria/catalog.py imports every one)."""
    return MappingProxyType(_CHECKS)
