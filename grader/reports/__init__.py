"""The grade's reports: report.json (Gradescope), junit.xml and report.html, plus a terminal table.

    from grader.reports import write_reports, score_table
    paths = write_reports(grade, Path("out"))   # {"json": out/report.json, "junit": ..., "html": ...}
    print(score_table(grade))

Each format is a pure function of the Grade, so the same Grade gives byte-identical files.
"""

from __future__ import annotations

from pathlib import Path

from grader.outcome import Grade
from grader.reports.gradescope import (
    HumanScoreError,
    apply_human_scores,
    dumps,
    person_part,
    restore_person_part,
    set_interview,
    to_gradescope,
)
from grader.reports.html import to_html
from grader.reports.junit import to_junit
from grader.reports.text import score_table

__all__ = [
    "FILE_NAMES",
    "HumanScoreError",
    "apply_human_scores",
    "person_part",
    "restore_person_part",
    "score_table",
    "set_interview",
    "to_gradescope",
    "to_html",
    "to_junit",
    "write_reports",
]

FILE_NAMES = {"json": "report.json", "junit": "junit.xml", "html": "report.html"}


def write_reports(grade: Grade, out: Path) -> dict[str, Path]:
    """Write the three reports into `out` (created if missing) and return their paths by format."""
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    texts = {"json": dumps(to_gradescope(grade)), "junit": to_junit(grade), "html": to_html(grade)}
    paths = {}
    for fmt, text in texts.items():
        path = out / FILE_NAMES[fmt]
        tmp = path.with_name(f".{path.name}.tmp")
        tmp.write_text(text, encoding="utf-8", newline="\n")
        tmp.replace(path)
        paths[fmt] = path
    return paths
