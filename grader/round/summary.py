"""The round's summary: `grades.csv` and `index.html`, rebuilt from report folders alone.

    from grader.round.summary import read_rows, write_index
    rows = read_rows(Path("grades"))          # every OUT/<name>/report.json, ranked
    write_index(rows, Path("grades"))         # grades.csv, index.html
    write_index(rows, out, analyse(out, rows))  # and the similarity, item analysis and score plots

Only report.json is read, so the summary of a run on one machine and of many Kubernetes pods
merged (`grader grade-many --merge`) are the same thing, and a person's checklist points
(`grader human-score`) count once the summary is rebuilt. Ranked by score (a person's points
included: the memo checklist's and, when there was an interview, its scoring sheet's), ties by name;
equal scores share a rank. The interview's points have a column of their own beside the automated score,
and a candidate's row links the interviewer's guide when there is one. With an analysis (grader.round.analysis), the
page also lists the similar pairs, the item analysis and each deliverable's score distribution, and
grades.csv gains each submission's highest similarity and what it matched
(grader/round/analysis_page.py).
"""

from __future__ import annotations

import csv
import html
import io
import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pygal

from grader.outcome import edition_fit_sentence
from grader.reports import FILE_NAMES
from grader.reports.interview_part import INTERVIEW_PREFIX
from grader.reports.page_style import CSS
from grader.reports.plots import CHART_STYLE, static_svg
from grader.reports.text import clean, fmt_points

if TYPE_CHECKING:
    from grader.round.analysis import Analysis

__all__ = [
    "CSV_NAME",
    "INDEX_NAME",
    "Row",
    "RowError",
    "missed_counts",
    "read_row",
    "read_rows",
    "summary_files",
    "to_csv",
    "to_index_html",
    "write_files",
    "write_index",
]

CSV_NAME = "grades.csv"
INDEX_NAME = "index.html"
FIXED_COLUMNS = [
    "rank",
    "name",
    "candidate",
    "score",
    "max_score",
    "percent",
    "human_score",
    "interview_score",
    "sandboxed",
    "inconclusive",
    "contract_problems",
    "seed",
    "edition",
    "contract",
    "fits",
]
#: The two columns grades.csv adds after the fixed ones when the similarity check ran.
SIMILARITY_COLUMNS = ["similarity", "similar_to"]
_CHART_MAX = 20  # criteria shown in the "most missed" chart


class RowError(ValueError):
    """A report folder whose report.json cannot be read as a kit report; names the file."""


@dataclass
class Row:
    name: str  # the report folder's name
    candidate: str
    score: float  # report.json's total, human points included
    max_score: float
    human_score: float | None  # None until a person scored the checklist
    sandboxed: bool
    contract_problems: int
    seed: int | None = None  # the grade's seed: one round, one seed (one exam)
    interview_score: float | None = None  # None until an interviewer scored the guide's sheet
    interview_max: float | None = None
    guide: str | None = None  # the interviewer's guide, relative to the report folder
    statuses: dict[str, str] = field(default_factory=dict)  # criterion id -> passed | failed | ...
    scores: dict[str, float] = field(default_factory=dict)  # criterion id -> points awarded
    weights: dict[str, float] = field(default_factory=dict)
    titles: dict[str, str] = field(default_factory=dict)
    deliverables: dict[str, str] = field(default_factory=dict)  # criterion id -> its deliverable
    rank: int = 0
    edition: str = ""  # the edition and contract version it was graded against (empty: a grade before they were)
    contract: int | None = None
    fits: str = ""  # "fits edition X; was issued Y (...)": it carries another edition's numbers (empty: its own)

    @property
    def percent(self) -> float:
        return 100.0 * self.score / self.max_score if self.max_score else 0.0

    @property
    def inconclusive(self) -> list[str]:
        return [cid for cid, status in self.statuses.items() if status == "inconclusive"]


def read_row(folder: Path) -> Row:
    """One candidate's row from `folder/report.json`."""
    path = folder / FILE_NAMES["json"]
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
        kit = data["extra_data"]["kit"]
        human = data["extra_data"]["human"]["checklist"]
        row = Row(
            name=folder.name,
            candidate=str(kit.get("candidate") or ""),
            score=float(data["score"]),
            max_score=float(data["max_score"]),
            sandboxed=bool(kit["sandboxed"]),
            contract_problems=len(kit["contract_problems"]),
            seed=kit.get("seed") if isinstance(kit.get("seed"), int) else None,
            human_score=_points([h for h in human if not str(h["id"]).startswith(INTERVIEW_PREFIX)]),
            interview_score=_points([h for h in human if str(h["id"]).startswith(INTERVIEW_PREFIX)]),
            interview_max=_points([h for h in human if str(h["id"]).startswith(INTERVIEW_PREFIX)], "max_score"),
            guide=data["extra_data"]["human"].get("interview_guide"),
        )
        edition = kit.get("edition") if isinstance(kit.get("edition"), dict) else {}
        row.edition = str(edition.get("name") or "")
        row.contract = edition["contract"] if isinstance(edition.get("contract"), int) else None
        row.fits = edition_fit_sentence(edition)
        for c in kit["criteria"]:
            awarded = float(c["score"]) if c["status"] in ("passed", "failed") else 0.0
            row.statuses[c["id"]], row.scores[c["id"]] = c["status"], awarded
            row.weights[c["id"]], row.titles[c["id"]] = float(c["weight"]), str(c["title"])
            row.deliverables[c["id"]] = str(c.get("deliverable") or c["id"].split(".")[0])
    except OSError as exc:
        raise RowError(f"{path}: cannot read ({exc.strerror})") from None
    except (ValueError, KeyError, TypeError) as exc:
        raise RowError(f"{path}: not a grader report.json ({type(exc).__name__}: {exc})") from None
    return row


def _points(items: list[dict[str, Any]], key: str = "score") -> float | None:
    """The scored items' points (or their maximum), None when a person scored none of them."""
    scored = [h for h in items if h["score"] is not None]
    return sum(float(h[key]) for h in scored) if scored else None


def read_rows(out: Path) -> list[Row]:
    """Every report folder directly under `out` (those holding report.json), ranked."""
    folders = [
        p
        for p in sorted(out.iterdir())
        if p.is_dir() and not p.name.startswith(".") and (p / FILE_NAMES["json"]).is_file()
    ]
    return rank([read_row(p) for p in folders])


def rank(rows: list[Row]) -> list[Row]:
    """Highest score first, ties by name; equal scores share the higher rank (1, 2, 2, 4)."""
    ordered = sorted(rows, key=lambda r: (-round(r.score, 6), r.name))
    for i, row in enumerate(ordered):
        same = i > 0 and round(row.score, 6) == round(ordered[i - 1].score, 6)
        row.rank = ordered[i - 1].rank if same else i + 1
    return ordered


def criterion_ids(rows: list[Row]) -> list[str]:
    """Every criterion graded in any row, in the order first met (the rubric's order)."""
    seen: dict[str, None] = {}
    for row in rows:
        seen.update(dict.fromkeys(row.statuses))
    return list(seen)


def _num(value: float) -> str:
    return f"{round(value, 6):g}"


def _closest(analysis: Analysis | None, name: str) -> tuple[str, str]:
    """(highest similarity, "other (deliverable)") for grades.csv; empty without a similarity check."""
    if analysis is None or analysis.similarity is None:
        return "", ""
    pair = analysis.similarity.highest(name)
    if pair is None:
        return "", ""
    other = pair.b if pair.a == name else pair.a
    return f"{pair.score:.4f}", f"{other} ({pair.deliverable})"


def to_csv(
    rows: list[Row], analysis: Analysis | None = None, columns: Mapping[str, Mapping[str, str]] | None = None
) -> str:
    """One row per candidate, one column per criterion (the points awarded; empty when not graded).

    With a similarity check, `similarity` and `similar_to` (the highest score and what it matched) follow
    the fixed columns; then `columns`, each a column name and its value by report folder (empty when it has
    none): what a person decided in `grader review`, which this room never reads itself."""
    ids = criterion_ids(rows)
    similar = analysis is not None and analysis.similarity is not None
    extra = dict(columns or {})
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerow(FIXED_COLUMNS + (SIMILARITY_COLUMNS if similar else []) + list(extra) + ids)
    for r in rows:
        writer.writerow(
            [
                r.rank,
                r.name,
                clean(r.candidate),
                _num(r.score),
                _num(r.max_score),
                f"{r.percent:.1f}",
                "" if r.human_score is None else _num(r.human_score),
                "" if r.interview_score is None else _num(r.interview_score),
                "yes" if r.sandboxed else "NO",
                " ".join(r.inconclusive),
                r.contract_problems,
                "" if r.seed is None else r.seed,
                clean(r.edition),
                "" if r.contract is None else r.contract,
                clean(r.fits),
            ]
            + (list(_closest(analysis, r.name)) if similar else [])
            + [clean(values.get(r.name, "")) for values in extra.values()]
            + [_num(r.scores[c]) if c in r.scores else "" for c in ids]
        )
    return buffer.getvalue()


def missed_counts(rows: list[Row]) -> list[tuple[str, int]]:
    """(criterion id, candidates who did not get it in full), most missed first, never-missed left out."""
    counts = {c: sum(1 for r in rows if c in r.scores and r.scores[c] < r.weights[c]) for c in criterion_ids(rows)}
    return sorted(((c, n) for c, n in counts.items() if n), key=lambda item: (-item[1], item[0]))


def _missed_chart(rows: list[Row]) -> str:
    missed = missed_counts(rows)[:_CHART_MAX]
    if not missed:
        return '<p class="empty">Every candidate got every criterion.</p>'
    chart = pygal.HorizontalBar(
        js=[],
        disable_xml_declaration=True,
        style=CHART_STYLE,
        width=760,
        height=90 + 26 * len(missed),
        explicit_size=False,
        show_legend=False,
        title=f"Criteria missed, by number of candidates (of {len(rows)})",
        print_values=True,
        truncate_label=-1,
        value_formatter=lambda v: f"{v:g}",
    )
    chart.x_labels = [clean(c) for c, _ in reversed(missed)]
    chart.add("candidates", [n for _, n in reversed(missed)])
    chart.uuid = "missed"
    chart.add_xml_filter(static_svg("missed"))
    return str(chart.render(is_unicode=True))


def _e(value: Any) -> str:
    return html.escape(clean(value), quote=True)


def to_index_html(rows: list[Row], analysis: Analysis | None = None) -> str:
    """A self-contained page: the ranking, each name linking its report.html, and the missed chart;
    with an analysis, the similar pairs (linking their side-by-side pages), the item analysis and plots."""
    ids = criterion_ids(rows)
    unsandboxed = [r.name for r in rows if not r.sandboxed]
    head = (
        "<tr><th class=num>#</th><th>Submission</th><th>Candidate</th><th class=num>Score</th>"
        "<th class=num>%</th><th class=num>Checklist</th><th class=num>Interview</th><th>Flags</th></tr>"
    )
    body = []
    for r in rows:
        similar = analysis.similarity.highest(r.name) if analysis and analysis.similarity else None
        similar_flag = (
            (
                f"similar to {similar.b if similar.a == r.name else similar.a} ({similar.deliverable} "
                f"{similar.score:.0%})"
            )
            if similar and similar.score >= similar_at(analysis)
            else ""
        )
        flags = (
            (["UNSANDBOXED"] if not r.sandboxed else [])
            + ([similar_flag] if similar_flag else [])
            + ([f"{len(r.inconclusive)} inconclusive"] if r.inconclusive else [])
            + ([f"{r.contract_problems} contract problems"] if r.contract_problems else [])
        )
        link = f'<a href="{_e(r.name)}/{FILE_NAMES["html"]}">{_e(r.name)}</a>'
        human = "–" if r.human_score is None else fmt_points(r.human_score)
        interview = _interview_cell(r)
        body.append(
            f"<tr><td class=num>{r.rank}</td><td>{link}</td><td>{_e(r.candidate)}</td>"
            f"<td class=num>{fmt_points(r.score)} / {fmt_points(r.max_score)}</td>"
            f"<td class=num>{r.percent:.1f}</td><td class=num>{human}</td><td class=num>{interview}</td>"
            f"<td>{_e(', '.join(flags))}</td></tr>"
        )
    missed = missed_counts(rows)
    legend = "".join(
        f"<tr><td class=mono>{_e(c)}</td><td class=num>{n}</td><td>{_e(_title(rows, c))}</td></tr>" for c, n in missed
    )
    warning = (
        (f'<div class="banner unsandboxed">UNSANDBOXED: {_e(", ".join(unsandboxed))} graded without a sandbox</div>')
        if unsandboxed
        else ""
    )
    return (
        "<!DOCTYPE html>\n<html lang=en><head><meta charset=utf-8>"
        "<meta name=viewport content='width=device-width, initial-scale=1'>"
        f"<title>Grades: {len(rows)} submissions</title><style>{CSS}</style></head><body>{warning}"
        f"<header><h1>Grades: {len(rows)} submissions, {len(ids)} criteria</h1>"
        "<p>Ranked by score, a person's points (the checklist's, the interview's) included once recorded; equal "
        "scores share a rank. "
        f"Every figure is in <code>{CSV_NAME}</code> beside this page.</p></header>"
        f"<main><table>{head}{''.join(body)}</table>"
        f"<h2>What most candidates missed</h2>{_missed_chart(rows)}"
        + (
            f"<table><tr><th>Criterion</th><th class=num>Missed by</th><th>What it asks</th></tr>{legend}</table>"
            if missed
            else ""
        )
        + (_analysis_html(analysis) if analysis is not None else "")
        + "</main></body></html>\n"
    )


def _interview_cell(row: Row) -> str:
    """The interview's points, linking the guide: '–' with no guide, 'guide' before anyone scored it."""
    if row.guide is None:
        return "–"
    shown = (
        "guide"
        if row.interview_score is None
        else f"{fmt_points(row.interview_score)} / {fmt_points(row.interview_max or 0)}"
    )
    return f'<a href="{_e(row.name)}/{_e(row.guide)}">{shown}</a>'


def _analysis_html(analysis: Analysis) -> str:
    from grader.round.analysis_page import analysis_html

    return analysis_html(analysis)


def similar_at(analysis: Analysis | None) -> float:
    return analysis.similarity.threshold if analysis and analysis.similarity else float("inf")


def _title(rows: list[Row], criterion: str) -> str:
    return next((r.titles[criterion] for r in rows if criterion in r.titles), "")


def summary_files(
    rows: list[Row], analysis: Analysis | None = None, columns: Mapping[str, Mapping[str, str]] | None = None
) -> dict[str, str]:
    """Every file of the summary by its path under the round's folder (`columns`: grades.csv's added ones)."""
    files = {CSV_NAME: to_csv(rows, analysis, columns), INDEX_NAME: to_index_html(rows, analysis)}
    if analysis is not None:
        from grader.round.analysis_page import analysis_files

        files.update(analysis_files(analysis))
    return files


def write_files(files: dict[str, str], out: Path) -> dict[str, Path]:
    """Write each file under `out`, replaced whole; the side-by-side pages' folder holds only this run's."""
    from grader.round.pair_page import FOLDER

    pages = out / FOLDER
    if pages.is_dir():
        for old in pages.glob("*.html"):
            if f"{FOLDER}/{old.name}" not in files:
                old.unlink()
    paths = {}
    for name, text in files.items():
        path = out / name
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name(f".{path.name}.tmp")
        tmp.write_text(text, encoding="utf-8", newline="\n")
        tmp.replace(path)
        paths[name] = path
    return paths


def write_index(
    rows: list[Row],
    out: Path,
    analysis: Analysis | None = None,
    columns: Mapping[str, Mapping[str, str]] | None = None,
) -> dict[str, Path]:
    """Write grades.csv (with `columns` added, when given) and index.html into `out` (each replaced whole), and
    the analysis's files when given; return their paths."""
    return write_files(summary_files(rows, analysis, columns), out)
