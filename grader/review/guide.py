"""The interviewer's guide of a candidate, built the first time their page is opened.

`grader interview` writes it (guide.md and guide.html in the report folder's `interview/`, the scoring sheet
into report.json); here the same function runs, under the report folder's lock, so two reviewers opening one
candidate at once build it once. In a round reviewed blind it names the candidate by their code, as
`grader interview` does there.
"""

from __future__ import annotations

from pathlib import Path

from grader.interview.write import InterviewError, write_interview
from grader.review.sheet import Conflict, candidate_lock, load_sheet

__all__ = ["ensure_guide"]


def ensure_guide(folder: Path) -> str | None:
    """Build the guide of the report folder `folder` unless it has one; None, or why it could not be built."""
    try:
        with candidate_lock(folder):
            sheet = load_sheet(folder)
            if sheet.guide and (folder / sheet.guide).is_file():
                return None
            write_interview(folder)
    except (InterviewError, Conflict) as exc:
        return f"No interviewer's guide: {exc}"
    except OSError as exc:
        return f"No interviewer's guide: {exc.filename or folder}: {exc.strerror}"
    return None
