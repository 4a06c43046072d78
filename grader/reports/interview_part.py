"""report.html's Interview section: the link to the interviewer's guide and the interview's points beside the
automated score.

The guide comes after the grade (`grader interview`), and a person's points after that (`grader
human-score`), so the section is written between two markers and rewritten from report.json whenever
either changes: report.json is the one place a person's points live (extra_data.human: the memo's
checklist as human.N, the interview's scoring sheet as interview.N, and the guide's path).
"""

from __future__ import annotations

import html
import json
from pathlib import Path
from typing import Any

from grader.reports.text import clean, fmt_points

__all__ = ["END", "INTERVIEW_PREFIX", "START", "placeholder", "points", "refresh", "section"]

INTERVIEW_PREFIX = "interview."
START, END = "<!-- interview: start -->", "<!-- interview: end -->"


def _e(value: object) -> str:
    return html.escape(clean(value), quote=True)


def points(document: dict[str, Any]) -> dict[str, tuple[float, float] | None]:
    """The report's points by who gave them: the automated grade's (every criterion), the memo checklist's and
    the interview's (None until a person recorded some)."""
    checklist = document["extra_data"]["human"]["checklist"]
    tests = [t for t in document["tests"] if "human" not in t.get("tags", [])]
    out: dict[str, tuple[float, float] | None] = {
        "automated": (sum(float(t["score"]) for t in tests), sum(float(t["max_score"]) for t in tests))
    }
    for name, own in (("checklist", False), ("interview", True)):
        scored = [e for e in checklist if str(e["id"]).startswith(INTERVIEW_PREFIX) == own and e["score"] is not None]
        out[name] = (
            (sum(float(e["score"]) for e in scored), sum(float(e["max_score"]) for e in scored)) if scored else None
        )
    return out


def placeholder() -> str:
    """The section as a grade writes it: its place alone, empty until an interviewer's guide is written (a
    candidate's self-check, which never has one, shows nothing)."""
    return START + END


def section(document: dict[str, Any]) -> str:
    """The section for what report.json holds now."""
    human = document["extra_data"]["human"]
    guide = human.get("interview_guide")
    if not guide:
        return placeholder()
    found = points(document)
    automated = found["automated"] or (0.0, 0.0)

    def shown(value: tuple[float, float] | None) -> str:
        return "not scored yet" if value is None else f"{fmt_points(value[0])} / {fmt_points(value[1])}"

    sheet = [e for e in human["checklist"] if str(e["id"]).startswith(INTERVIEW_PREFIX)]
    rows = "".join(
        f'<tr><td class="num mono">{_e(e["id"])}</td><td>{_e(e["item"])}</td><td class=num>'
        + ("–" if e["score"] is None else f"{fmt_points(e['score'])} / {fmt_points(e['max_score'])}")
        + "</td></tr>"
        for e in sheet
    )
    return (
        f'{START}<section class="checklist" id="interview"><h2>Interview</h2>'
        f'<p>The interviewer\'s guide: <a href="{_e(guide)}">{_e(guide)}</a>.</p><dl class="facts">'
        f"<dt>Automated score</dt><dd>{shown(automated)}</dd>"
        f"<dt>Checklist</dt><dd>{shown(found['checklist'])}</dd>"
        f"<dt>Interview</dt><dd>{shown(found['interview'])}</dd>"
        f"<dt>Total</dt><dd>{fmt_points(float(document['score']))} / {fmt_points(float(document['max_score']))}"
        "</dd></dl>"
        + (
            '<table><thead><tr><th class="num">#</th><th>Scoring sheet</th><th class="num">Points</th></tr></thead>'
            f"<tbody>{rows}</tbody></table>"
            if rows
            else ""
        )
        + f"<p>Record points with <code>grader human-score report.json interview.N=SCORE/MAX</code>.</p></section>{END}"
    )


def refresh(report_json: Path) -> None:
    """Rewrite the Interview section of the report.html beside `report_json` (nothing when there is none)."""
    page = report_json.with_name("report.html")
    if not page.is_file():
        return
    document = json.loads(report_json.read_text(encoding="utf-8"))
    text = page.read_text(encoding="utf-8")
    new = section(document)
    if START in text and END in text:
        text = text[: text.index(START)] + new + text[text.index(END) + len(END) :]
    else:  # a report written before the section existed
        text = text.replace("<footer>", new + "<footer>", 1)
    tmp = page.with_name(f".{page.name}.tmp")
    tmp.write_text(text, encoding="utf-8", newline="\n")
    tmp.replace(page)
