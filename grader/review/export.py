"""Export: the round's grades.csv with the interview's points and the decisions taken in the page.

It is the round's own summary (`grader grade-many --merge ROUND --out ROUND` rebuilds the same: grades.csv,
index.html, the analysis and, in a round summarised with `--anonymize`, the blind copy) written by the same
function, with two columns added from each report folder's review.json: `decision` and `decision_reason`.
The similarity check runs as the round's did where its files show how (`similarity.csv` there, the kit's
reference and chaff among the pairs); a `--leak` given to grade-many is not known here and is left out.
"""

from __future__ import annotations

import csv
from pathlib import Path

from grader.review.round_view import ReviewError, ReviewRound
from grader.review.sheet import decision_columns
from grader.round.analysis_page import SIMILARITY_CSV
from grader.round.blind import CODES, BlindError
from grader.round.rebuild import SummaryOptions, summarise
from grader.round.similarity import DEFAULT_THRESHOLD, SimilarityError
from grader.round.summary import CSV_NAME, RowError

__all__ = ["export_grades", "summary_options"]


def summary_options(root: Path) -> SummaryOptions:
    """The summary's options as the round's own files show them."""
    path = root / SIMILARITY_CSV
    leaks = False
    if path.is_file():
        with path.open(encoding="utf-8", newline="") as handle:
            leaks = any(r.get("leak") == "yes" for r in csv.DictReader(handle))
    return SummaryOptions(
        threshold=DEFAULT_THRESHOLD if path.is_file() else None,
        kit_leaks=leaks,
        anonymize=(root / CODES).is_file(),
    )


def export_grades(review: ReviewRound) -> Path:
    """Rebuild the round's summary with the decisions; the path of grades.csv. ReviewError in one line."""
    if review.single:
        raise ReviewError("export needs a round folder (this review is of one report folder)")
    rows = review.rows()
    columns = decision_columns({row.name: review.folder(row.name) for row in rows})
    try:
        summarise(review.root, summary_options(review.root), columns)
    except (RowError, SimilarityError, BlindError) as exc:
        raise ReviewError(str(exc)) from None
    except OSError as exc:
        raise ReviewError(f"{exc.filename or review.root}: {exc.strerror}") from None
    return review.root / CSV_NAME
