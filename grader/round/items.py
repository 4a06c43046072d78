"""Item analysis over a round: which criteria tell strong candidates from weak ones.

    from grader.round.items import item_analysis, deliverable_scores
    items = item_analysis(rows)          # one Item per criterion, in the rubric's order
    [i.criterion for i in items if i.flags]

For each criterion, over the candidates graded on it (passed or failed; inconclusive and skipped
grades say nothing about the candidate and are left out):

- the pass rate: the share who passed;
- the mean score: the mean of the points awarded;
- the discrimination: the corrected item-total correlation, Pearson's r between the criterion's
  points and each candidate's total without it (the points of every other criterion of theirs).
  Undefined (None) when either side does not vary, or fewer than three candidates were graded.

A criterion is flagged when everyone passes it or everyone fails it (it ranks nobody), or when its
discrimination is negative (the stronger the rest of a grade, the likelier this one is lost: a
check that may be measuring the wrong thing). Human checklist points are not criteria and take
no part.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

__all__ = ["Item", "ScoredRow", "deliverable_scores", "item_analysis", "pearson"]

_GRADED = ("passed", "failed")


class ScoredRow(Protocol):
    """What the analysis reads of a round's row (grader.round.summary.Row has it)."""

    name: str
    statuses: dict[str, str]
    scores: dict[str, float]
    weights: dict[str, float]
    titles: dict[str, str]
    deliverables: dict[str, str]


@dataclass(frozen=True)
class Item:
    criterion: str
    deliverable: str
    title: str
    weight: float
    graded: int  # candidates graded on it (passed or failed)
    pass_rate: float | None  # None when nobody was graded on it
    mean_score: float | None
    discrimination: float | None

    @property
    def flags(self) -> list[str]:
        out = []
        if self.graded and self.pass_rate == 1.0:
            out.append("everyone passes")
        if self.graded and self.pass_rate == 0.0:
            out.append("everyone fails")
        if self.discrimination is not None and self.discrimination < 0:
            out.append("negative discrimination")
        return out


def pearson(xs: Sequence[float], ys: Sequence[float]) -> float | None:
    """Pearson's r; None when there are fewer than three pairs or either side has no spread."""
    n = len(xs)
    if n < 3 or n != len(ys):
        return None
    mx, my = math.fsum(xs) / n, math.fsum(ys) / n
    sxy = math.fsum((x - mx) * (y - my) for x, y in zip(xs, ys, strict=True))
    sxx = math.fsum((x - mx) ** 2 for x in xs)
    syy = math.fsum((y - my) ** 2 for y in ys)
    if sxx <= 1e-12 or syy <= 1e-12:
        return None
    return max(-1.0, min(1.0, sxy / math.sqrt(sxx * syy)))


def _order(rows: Sequence[ScoredRow]) -> list[str]:
    seen: dict[str, None] = {}
    for row in rows:
        seen.update(dict.fromkeys(row.statuses))
    return list(seen)


def item_analysis(rows: Sequence[ScoredRow]) -> list[Item]:
    """One Item per criterion graded in the round, in the order criteria were first met (the rubric's)."""
    items = []
    totals = {row.name: math.fsum(row.scores.values()) for row in rows}
    for criterion in _order(rows):
        graded = [row for row in rows if row.statuses.get(criterion) in _GRADED]
        points = [row.scores[criterion] for row in graded]
        rest = [totals[row.name] - row.scores[criterion] for row in graded]
        anyone = next((row for row in rows if criterion in row.statuses), None)
        items.append(
            Item(
                criterion=criterion,
                deliverable=anyone.deliverables.get(criterion, "") if anyone else "",
                title=anyone.titles.get(criterion, "") if anyone else "",
                weight=anyone.weights.get(criterion, 0.0) if anyone else 0.0,
                graded=len(graded),
                pass_rate=sum(row.statuses[criterion] == "passed" for row in graded) / len(graded) if graded else None,
                mean_score=math.fsum(points) / len(points) if points else None,
                discrimination=pearson(points, rest),
            )
        )
    return items


def deliverable_scores(rows: Sequence[ScoredRow]) -> dict[str, list[tuple[str, float, float]]]:
    """For each deliverable, each candidate's (name, points, maximum) over its criteria they were graded on."""
    out: dict[str, list[tuple[str, float, float]]] = {}
    for row in rows:
        mine: dict[str, list[float]] = {}
        for criterion, status in row.statuses.items():
            if status not in _GRADED:
                continue
            deliverable = row.deliverables.get(criterion, "")
            got, most = mine.setdefault(deliverable, [0.0, 0.0])
            mine[deliverable] = [got + row.scores[criterion], most + row.weights[criterion]]
        for deliverable, (got, most) in mine.items():
            out.setdefault(deliverable, []).append((row.name, got, most))
    return out
