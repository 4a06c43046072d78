"""`summarise`: the round's summary rebuilt from its report folders, with what it adds to the ranking.

The ranking (grades.csv, index.html: summary.py), the similarity and item analysis (analysis.py), the blind copy
and its code-to-name map (blind.py), in the order they depend on each other. `grader grade-many` calls it after
grading, merging or re-judging (grader/cli/round_modes.py says what it wrote); `grader review` after a decision.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from grader.round.similarity import DEFAULT_THRESHOLD
from grader.round.summary import Row, read_rows, write_index

if TYPE_CHECKING:
    from grader.round.analysis import Analysis

__all__ = ["Summary", "SummaryOptions", "summarise"]


@dataclass(frozen=True)
class SummaryOptions:
    """What the round's summary adds to the ranking (docs/grading-many.md)."""

    threshold: float | None = DEFAULT_THRESHOLD  # None: no similarity check
    leaks: tuple[Path, ...] = ()
    kit_leaks: bool = True
    against: tuple[Path, ...] = ()  # earlier rounds' --out folders, compared with this one
    anonymize: bool = False
    reveal: Path | None = None
    jobs: int = 1


@dataclass
class Summary:
    """What `summarise` wrote: the ranking, its analysis, the files' paths, the blind copy and the map."""

    rows: list[Row]
    analysis: Analysis
    paths: dict[str, Path]
    carried: list[str]  # names whose reports took checklist points from the blind copy
    blind: Path | None = None
    revealed: Path | None = None


def summarise(
    out: Path, options: SummaryOptions = SummaryOptions(), columns: Mapping[str, Mapping[str, str]] | None = None
) -> Summary:
    """Rebuild the round's summary in `out` from its report folders (grades.csv, index.html, the analysis, the
    blind copy when asked); `columns` adds grades.csv columns by name (column -> report folder -> value).

    Raises RowError, SimilarityError, BlindError (one line naming the file) and OSError."""
    from grader.round.analysis import analyse
    from grader.round.blind import carry_back, codes_for, write_blind, write_reveal

    rows = read_rows(out)
    took = carry_back(out, codes_for(out, [r.name for r in rows])) if options.anonymize else []
    if took:
        rows = read_rows(out)
    analysis = analyse(
        out,
        rows,
        threshold=options.threshold,
        leaks=options.leaks,
        kit_leaks=options.kit_leaks,
        against=options.against,
        jobs=options.jobs,
    )
    paths = write_index(rows, out, analysis, columns)
    blind = write_blind(out, rows, analysis) if options.anonymize else None
    revealed = write_reveal(out, options.reveal, rows) if options.reveal is not None else None
    return Summary(rows, analysis, paths, took, blind, revealed)
