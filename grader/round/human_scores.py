"""A person's checklist points, `ITEM=SCORE/MAX`, parsed and written into a grade's report.json at once."""

from __future__ import annotations

import math
from collections.abc import Sequence
from pathlib import Path
from typing import Any

__all__ = ["parse_score", "record_human_scores"]


def parse_score(text: str) -> tuple[str, tuple[float, float]]:
    """`human.1=2/3` (or `<item text>=2.5/4`) as (item, (score, max_score)); ValueError says what is wrong."""
    item, sep, points = text.rpartition("=")
    if not sep or not item:
        raise ValueError(f"{text!r}: expected ITEM=SCORE/MAX, e.g. human.1=2/3")
    score_text, slash, max_text = points.partition("/")
    if not slash:
        raise ValueError(f"{text!r}: the points must be SCORE/MAX, e.g. 2/3")
    try:
        score, max_score = float(score_text), float(max_text)
    except ValueError:
        raise ValueError(f"{text!r}: SCORE and MAX must be numbers") from None
    if not (math.isfinite(score) and math.isfinite(max_score)):
        raise ValueError(f"{text!r}: SCORE and MAX must be finite numbers")
    return item.strip(), (score, max_score)


def record_human_scores(report_json: Path, scores: Sequence[str]) -> dict[str, Any]:
    """What `grader human-score REPORT_JSON ITEM=SCORE/MAX...` records: each argument parsed, then every point
    written into report.json at once (and report.html's Interview section); the document written.

    ValueError (a HumanScoreError among them) says what is wrong in one line; the file is then left as it was."""
    from grader.reports import apply_human_scores

    parsed: dict[str, tuple[float, float]] = {}
    for text in scores:
        item, points = parse_score(text)
        if item in parsed:
            raise ValueError(f"{text!r}: {item} is scored twice")
        parsed[item] = points
    return apply_human_scores(report_json, parsed)
