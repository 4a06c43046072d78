"""report.html: one self-contained page a hiring team can read, print and forward.

No external URL, no script, the stylesheet inline and every plot an inline SVG, so the file looks
the same offline and as an attachment. Every string that came from the submission (outputs,
reported figures, logs, table cells) is untrusted: it goes through `_text`, which escapes it for
HTML after `clean` has made its control characters visible. Hidden criteria are shown, with a
label, because this page is for the hiring team, not the candidate.
"""

from __future__ import annotations

import html
import re
from typing import Any

from grader.outcome import CriterionResult, Grade
from grader.reports.interview_part import placeholder as interview_placeholder
from grader.reports.page_style import CSS
from grader.reports.plots import plot_svg
from grader.reports.text import (
    awarded,
    by_deliverable,
    clean,
    fmt_points,
    fmt_seconds,
    replay_command,
    sandbox_warning,
    status_counts,
    totals,
)

__all__ = ["MAX_TABLE_ROWS", "STATUS_LABELS", "to_html"]

STATUS_LABELS = {"passed": "✓ PASSED", "failed": "✗ FAILED", "inconclusive": "? INCONCLUSIVE", "skipped": "– SKIPPED"}
MAX_TABLE_ROWS = 500


def _text(value: Any) -> str:
    return html.escape(clean(value), quote=True)


def _cell(value: Any) -> str:
    if value is None:
        return '<span class="empty">–</span>'
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        return f"{value:.6g}"
    return _text(value)


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _slug(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9_-]+", "-", text).strip("-") or "x"


def _block(title: str, body: str) -> str:
    inner = f"<pre>{_text(body)}</pre>" if body.strip() else '<p class="empty">nothing recorded</p>'
    return f"<h3>{title}</h3>{inner}"


def _accounts(c: CriterionResult) -> str:
    """The three accounts side by side in the reader's mind: sent, reported, the ledger's truth."""
    e = c.evidence
    if not (e.sent.strip() or e.reported.strip() or e.truth.strip()):
        return '<p class="empty">No record of what was sent, reported or in the ledger.</p>'
    return (
        f"{_block('What the grader sent', e.sent)}{_block('What the candidate reported', e.reported)}"
        f"{_block('What the ledger shows', e.truth)}"
    )


def _header(grade: Grade) -> str:
    score, max_score = totals(grade)
    counts = status_counts(grade.criteria)
    warning = sandbox_warning(grade)
    if warning:
        banner = f'<div class="banner unsandboxed" id="sandbox">{_text(warning)}</div>'
    else:
        banner = f'<div class="banner sandboxed" id="sandbox">Sandboxed: {_text(grade.sandbox_note)}</div>'
    facts = [
        ("Candidate", _text(grade.candidate) if grade.candidate else '<span class="empty">not given</span>'),
        ("Submission", f'<span class="mono">{_text(grade.submission)}</span>'),
        ("Score", f'<span class="total">{fmt_points(score)} / {fmt_points(max_score)}</span>'),
        ("Criteria", ", ".join(f'{n} <span class="badge {s}">{s}</span>' for s, n in counts.items())),
        ("Started", _text(grade.started)),
        ("Duration", f"{fmt_seconds(grade.duration_s)} s"),
        ("Seed", str(grade.seed)),
        ("Rubric", f'<span class="mono">{_text(grade.rubric)}</span>'),
        ("Sandbox", _text(grade.sandbox_note)),
    ]
    if grade.edition:
        edition = grade.edition
        facts.insert(
            -2,
            (
                "Graded against",
                _text(f"contract {edition.get('contract')}, edition {edition.get('name')}, kit {edition.get('kit')}"),
            ),
        )
    if grade.edition_fit:
        facts.insert(
            -2, ("Edition fit", _text(grade.edition_fit + ": a solution from another cohort? A person should look."))
        )
    rows = "".join(f"<dt>{k}</dt><dd>{v}</dd>" for k, v in facts)
    problems = ""
    if grade.contract_problems:
        items = "".join(f"<li>{_text(p)}</li>" for p in grade.contract_problems)
        problems = f"<h3>Contract problems</h3><ul>{items}</ul>"
    return f'{banner}<header id="summary"><h1>Grade report</h1><dl class="facts">{rows}</dl>{problems}</header>'


def _score_table(grade: Grade) -> str:
    rows = []
    for deliverable, criteria in by_deliverable(grade).items():
        got = round(sum(awarded(c) for c in criteria), 6)
        out_of = round(sum(c.weight for c in criteria), 6)
        counts = status_counts(criteria)
        summary = ", ".join(f"{n} {s}" for s, n in counts.items() if n)
        rows.append(
            f'<tr class="deliverable"><td>{_text(deliverable)}</td><td>{summary}</td>'
            f'<td class="num">{fmt_points(got)} / {fmt_points(out_of)}</td></tr>'
        )
        for c in criteria:
            hidden = ' <span class="tag">hidden</span>' if c.visibility == "hidden" else ""
            rows.append(
                f'<tr><td><a href="#{_text(c.id)}" class="mono">{_text(c.id)}</a>{hidden}</td>'
                f'<td><span class="badge {c.status}">{STATUS_LABELS[c.status]}</span> {_text(c.title)}</td>'
                f'<td class="num">{fmt_points(awarded(c))} / {fmt_points(c.weight)}</td></tr>'
            )
    return (
        '<section class="scores" id="scores"><h2>Scores by deliverable</h2><table>'
        '<thead><tr><th>Criterion</th><th>Result</th><th class="num">Points</th></tr></thead>'
        f"<tbody>{''.join(rows)}</tbody></table></section>"
    )


def _evidence_table(columns: list[str], rows: list[list[Any]]) -> str:
    if not columns and not rows:
        return ""
    shown = rows[:MAX_TABLE_ROWS]
    numeric = [
        bool(shown) and all(_is_number(r[i]) or r[i] is None for r in shown if i < len(r)) for i in range(len(columns))
    ]
    head = "".join(f"<th{' class=num' if numeric[i] else ''}>{_text(c)}</th>" for i, c in enumerate(columns))
    body = "".join(
        "<tr>"
        + "".join(
            f"<td{' class=num' if i < len(numeric) and numeric[i] else ''}>{_cell(v)}</td>" for i, v in enumerate(row)
        )
        + "</tr>"
        for row in shown
    )
    more = (
        f'<p class="empty">{len(rows) - MAX_TABLE_ROWS} more rows not shown; report.json has them all.</p>'
        if len(rows) > MAX_TABLE_ROWS
        else ""
    )
    return (
        f'<h3>Evidence</h3><div class="table-wrap"><table><thead><tr>{head}</tr></thead>'
        f"<tbody>{body}</tbody></table></div>{more}"
    )


def _plots(c: CriterionResult, position: int) -> str:
    """The criterion's plots, drawn where a person reads them: a criterion that failed, was undecided or came
    close to a limit. A pass clear of its limits says so instead (drawing every plot of every grade was most of
    what re-judging a round cost)."""
    if c.evidence.plots and c.status == "passed" and not c.near_miss:
        return (
            '<h3>Plots</h3><p class="empty">Not drawn: it passed clear of its limits (plots are drawn for a '
            "criterion that failed, was undecided or came close to a limit).</p>"
        )
    figures = []
    for n, plot in enumerate(c.evidence.plots):
        chart_id = f"{position}-{_slug(c.id)}-{n}"  # the position keeps ids unique when slugs collide
        svg, dropped = plot_svg(plot, chart_id)
        note = f" Thinned for the page: {dropped} points not drawn." if dropped else ""
        figures.append(
            f'<figure class="plot" id="plot-{chart_id}">{svg}'
            f"<figcaption>{_text(plot.title)} ({plot.kind}).{note}</figcaption></figure>"
        )
    return f'<h3>Plots</h3><div class="plots">{"".join(figures)}</div>' if figures else ""


def _criterion(c: CriterionResult, position: int, replay: str | None = None) -> str:
    hidden = (
        (
            ' <span class="tag">hidden</span><span class="hidden-note">not shown to the candidate until'
            " grades are published</span>"
        )
        if c.visibility == "hidden"
        else ""
    )
    rerun = f", {c.attempts} attempts" if c.attempts > 1 else ""
    e = c.evidence
    close = (
        f"<dt>Closest call</dt><dd>{_text(c.closest)} (margin {c.margin:.2f})</dd>"
        if c.closest and c.margin is not None
        else ""
    )
    twice = f"<dt>Judged twice</dt><dd>{_text(c.rerun)}</dd>" if c.rerun else ""
    facts = (
        f'<dl class="facts"><dt>Tolerance</dt><dd>{_text(c.tolerance) or "<span class=empty>none stated</span>"}</dd>'
        f'<dt>Scenario</dt><dd class="mono">{_text(c.scenario) or "<span class=empty>none</span>"}</dd>'
        f"<dt>Deliverable</dt><dd>{_text(c.deliverable)}</dd>{close}{twice}</dl>"
    )
    logs = (
        (
            f'<details class="logs"><summary>Logs ({len(e.logs.splitlines())} lines)</summary>'
            f"<pre>{_text(e.logs)}</pre></details>"
        )
        if e.logs
        else ""
    )
    return (
        f'<section class="criterion {c.status}" id="{_text(c.id)}">'
        f'<h2><span class="badge {c.status}">{STATUS_LABELS[c.status]}</span>'
        f'<a href="#{_text(c.id)}" class="mono">{_text(c.id)}</a> {_text(c.title)}{hidden}</h2>'
        f'<p class="points">{fmt_points(awarded(c))} / {fmt_points(c.weight)} points, '
        f"{fmt_seconds(c.duration_s)} s{rerun}</p>"
        f"{_block('What the candidate sees', c.output)}{facts}{_accounts(c)}"
        f"{_evidence_table(e.columns, e.rows)}{_plots(c, position)}{logs}{_replay(replay)}{_unseen(c)}</section>"
    )


def _replay(command: str | None) -> str:
    if not command:
        return ""
    return (
        f'<p class="replay">Replay its runs, with what made it fail beside the ledgers: '
        f"<code>{_text(command)}</code></p>"
    )


def _unseen(c: CriterionResult) -> str:
    """The criterion's verdict on the unseen variants of its scenarios: the hiring team's, never the candidate's."""
    if c.unseen is None:
        return ""
    u = c.unseen
    return (
        f'<details class="unseen"{" open" if u.status == "failed" else ""}><summary>Unseen variants: '
        f'<span class="badge {u.status}">{STATUS_LABELS[u.status]}</span> (for the hiring team; the candidate '
        f"is told only passed or failed)</summary>{_block('On the variants', u.output)}"
        f"{_block('What the grader ran', u.evidence.sent) if u.evidence.sent else ''}"
        f"{_evidence_table(u.evidence.columns, u.evidence.rows)}</details>"
    )


def _checklist(grade: Grade) -> str:
    if grade.human_checklist:
        rows = "".join(
            f'<tr><td class="num">{i}</td><td>{_text(item)}</td>'
            f'<td><input type="number" min="0" step="any" name="human.{i}.score" aria-label="score for item {i}"></td>'
            f'<td><input type="number" min="0" step="any" name="human.{i}.max" aria-label="out of, item {i}"></td>'
            f'<td><input type="text" name="human.{i}.note" aria-label="note for item {i}"></td></tr>'
            for i, item in enumerate(grade.human_checklist, start=1)
        )
        body = (
            "<p>Fill in as you read (or on paper); record the points in report.json with "
            "<code>apply_human_scores</code>, keyed by <code>human.N</code>.</p>"
            '<table><thead><tr><th class="num">#</th><th>What to judge</th><th>Score</th><th>Out of</th>'
            f"<th>Note</th></tr></thead><tbody>{rows}</tbody></table>"
        )
    else:
        body = '<p class="empty">Nothing left for a person to judge.</p>'
    return f'<section class="checklist" id="checklist"><h2>For a person to judge</h2>{body}</section>'


def to_html(grade: Grade) -> str:
    """The whole page for `grade`."""
    score, max_score = totals(grade)
    warning = sandbox_warning(grade)
    flag = warning.split(":", 1)[0].upper() + " " if warning else ""
    title = f"{flag}Grade {fmt_points(score)}/{fmt_points(max_score)}"
    title += f": {clean(grade.candidate or grade.submission)}"
    criteria = "".join(_criterion(c, i, replay_command(grade, c)) for i, c in enumerate(grade.criteria, start=1))
    return (
        "<!DOCTYPE html>\n"
        '<html lang="en"><head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f"<title>{_text(title)}</title><style>{CSS}</style></head><body>"
        f"{_header(grade)}{_score_table(grade)}{interview_placeholder()}"
        f'<main id="criteria">{criteria}</main>{_checklist(grade)}'
        f"<footer>Graded with rubric {_text(grade.rubric)}, seed {grade.seed}, started {_text(grade.started)}."
        "</footer></body></html>\n"
    )
