"""The guide as Markdown (to read in an editor, print or paste) and as HTML in the report's own style.

Both are pure functions of a `Guide` and say the same things. Everything quoted from a run (evidence
lines, figures) came from the candidate's code and is untrusted: the HTML escapes it after `clean`, the
Markdown cuts it out of table syntax. The HTML page, like report.html, has no script and no outside URL.
"""

from __future__ import annotations

import html
import shlex

from grader.interview.guide import LIVE_ON_SHEET, Asked, Guide, Part
from grader.reports.page_style import CSS
from grader.reports.text import clean, fmt_points

__all__ = ["SCALE", "to_html", "to_markdown"]

#: What each point of a question is worth on the scoring sheet.
SCALE = (
    "0: no answer, or a wrong one",
    "1: names the rule, not their own code",
    "2: explains their own figure from their own code",
    "3: and says what they would change, and what it would cost",
)
_USE = (
    "Ask about the failures first, then the closest calls, then one or two of the passes. Each question quotes "
    "the candidate's own figures from the grade's runs, so an answer has to come from their code; what a good "
    "answer covers is for you, not for the candidate. A live exercise (`grader live`) puts a state the grade "
    "never ran in front of their code. Score each line of the sheet at the end from 0 to 3."
)
_EXTRA_CSS = """
.question { border: 1px solid var(--line); border-left: 6px solid #1f5fa8; border-radius: 6px; padding: 8px 14px;
  margin: 10px 0; page-break-inside: avoid; }
.question .ask { font-size: 16px; margin: 2px 0 6px; }
.question .good { color: var(--muted); margin: 0; }
.question .meta { font-size: 13px; color: var(--muted); }
section.part { max-width: 1060px; margin: 0 auto; padding: 0 20px; }
.sheet input[type=number] { width: 5em; }
.sheet input[type=text] { width: 100%; }
"""


def _cell(value: object) -> str:
    return " ".join(clean(value).replace("|", "\\|").split())


def _points(part: Part) -> str:
    return f"{fmt_points(part.points)} / {fmt_points(part.weight)}"


def _margin(value: float | None) -> str:
    return "–" if value is None else f"{value:.2f}"


def _record_command(report_json: str, count: int) -> str:
    items = " ".join(f"interview.{i}=SCORE/3" for i in range(1, min(count, 3) + 1))
    return f"grader human-score {shlex.quote(report_json)} {items}" + (" ..." if count > 3 else "")


def to_markdown(guide: Guide, *, report_href: str, report_json: str, submission_arg: str) -> str:
    """The guide as one Markdown page."""
    out = [
        f"# Interviewer's guide: {_cell(guide.who)}",
        "",
        (
            f"Submission `{_cell(guide.submission)}`, graded {_cell(guide.started)}, seed {guide.seed}"
            + (f" against {_cell(guide.edition)}" if guide.edition else "")
            + ": automated "
            f"score **{fmt_points(guide.score)} / {fmt_points(guide.max_score)}** ([the report]({report_href}))."
        ),
        "",
        _USE,
        "",
        "## At a glance",
        "",
        "| deliverable | points | failed | borderline | passed |",
        "| --- | ---: | ---: | ---: | ---: |",
    ]
    for part in guide.parts:
        counts = {o: sum(1 for r in part.rows if r.outcome == o) for o in ("failed", "borderline", "passed")}
        out.append(
            f"| {part.deliverable} | {_points(part)} | {counts['failed']} | {counts['borderline']} | {counts['passed']} |"
        )
    for part in guide.parts:
        out += ["", f"## {part.deliverable} ({_points(part)})", "", "### Verdicts", ""]
        out += [
            "| criterion | verdict | points | margin | runs | unseen variants |",
            "| --- | --- | ---: | ---: | ---: | --- |",
        ]
        for r in part.rows:
            out.append(
                f"| `{r.id}` | {r.status}"
                + (" (close)" if r.outcome == "borderline" else "")
                + f" | {fmt_points(r.points)} / {fmt_points(r.weight)} | {_margin(r.margin)} | {r.attempts} | "
                f"{r.unseen or '–'} |"
            )
        out += ["", "### Closest calls", ""]
        out += [f"- `{cid}`: {_cell(why)}" for cid, why in part.close_calls] or [
            "- none: every margin is far from its tolerance"
        ]
        out += ["", "### Failures", ""]
        out += [f"- `{cid}`: {_cell(line)}" for cid, line in part.failures] or ["- none"]
        out += ["", "### Questions", ""]
        for q in part.questions:
            out += _markdown_question(q)
        if not part.questions:
            out.append("- none")
    out += [
        "",
        "## Live exercises",
        "",
        "| exercise | deliverable | time box | why this one |",
        "| --- | --- | ---: | --- |",
    ]
    out += [
        f"| `{e.name}`{' (suggested)' if i < LIVE_ON_SHEET else ''} | {e.deliverable} | {e.time_box_min:g} min | "
        f"{_cell(e.title)}: {_cell(e.why)} |"
        for i, e in enumerate(guide.live)
    ]
    if guide.live:
        out += [
            "",
            f"Run one: `grader live {submission_arg} EXERCISE` (or `--by-hand`); `grader live --list` lists them.",
        ]
    out += ["", "## Scoring sheet", "", "Score each line " + "; ".join(SCALE) + ".", ""]
    out += ["| # | what to judge | score (0–3) | note |", "| ---: | --- | --- | --- |"]
    out += [f"| interview.{i} | {_cell(item)} |  |  |" for i, item in enumerate(guide.sheet, start=1)]
    out += ["", f"Record the points: `{_record_command(report_json, len(guide.sheet))}`", ""]
    return "\n".join(out)


def _markdown_question(q: Asked) -> list[str]:
    return [
        f"**{q.number}.** {_cell(q.text)}",
        (
            f"  *({q.criterion}, {q.outcome}; the brief's `{q.anchor or 'criterion text'}`)* "
            f"A good answer covers: {_cell(q.good_answer)}"
        ),
        "",
    ]


def _e(value: object) -> str:
    return html.escape(clean(value), quote=True)


def to_html(guide: Guide, *, report_href: str, report_json: str, submission_arg: str) -> str:
    """The guide as one self-contained page in the report's style."""
    facts = [
        ("Candidate", _e(guide.who)),
        ("Submission", f'<span class="mono">{_e(guide.submission)}</span>'),
        ("Automated score", f'<span class="total">{fmt_points(guide.score)} / {fmt_points(guide.max_score)}</span>'),
        (
            "Graded",
            f"{_e(guide.started)}, seed {guide.seed}" + (f", against {_e(guide.edition)}" if guide.edition else ""),
        ),
        ("Report", f'<a href="{_e(report_href)}">{_e(report_href)}</a>'),
    ]
    glance = "".join(
        f"<tr><td><a href='#{_e(p.deliverable)}'>{_e(p.deliverable)}</a></td><td class=num>{_points(p)}</td>"
        + "".join(
            f"<td class=num>{sum(1 for r in p.rows if r.outcome == o)}</td>" for o in ("failed", "borderline", "passed")
        )
        + "</tr>"
        for p in guide.parts
    )
    body = [
        (
            '<header id="summary"><h1>Interviewer\'s guide</h1><dl class="facts">'
            + "".join(f"<dt>{k}</dt><dd>{v}</dd>" for k, v in facts)
            + f"</dl><p>{_e(_USE)}</p></header>"
        ),
        (
            '<section class="part" id="glance"><h2>At a glance</h2><table><thead><tr><th>Deliverable</th>'
            "<th class=num>Points</th><th class=num>Failed</th><th class=num>Borderline</th><th class=num>Passed</th>"
            f"</tr></thead><tbody>{glance}</tbody></table></section>"
        ),
    ]
    body += [_html_part(part) for part in guide.parts]
    live = "".join(
        f"<tr><td class=mono>{_e(e.name)}{' <span class=tag>suggested</span>' if i < LIVE_ON_SHEET else ''}</td>"
        f"<td>{_e(e.deliverable)}</td><td class=num>{e.time_box_min:g} min</td>"
        f"<td>{_e(e.title)}: {_e(e.why)}</td></tr>"
        for i, e in enumerate(guide.live)
    )
    body.append(
        '<section class="part" id="live"><h2>Live exercises</h2>'
        + (
            "<table><thead><tr><th>Exercise</th><th>Deliverable</th><th class=num>Time box</th><th>Why this one</th>"
            f"</tr></thead><tbody>{live}</tbody></table><p>Run one: <code>grader live {_e(submission_arg)} EXERCISE"
            "</code> (or <code>--by-hand</code>).</p>"
            if guide.live
            else '<p class="empty">This kit has no live exercises.</p>'
        )
        + "</section>"
    )
    rows = "".join(
        f'<tr><td class="num mono">interview.{i}</td><td>{_e(item)}</td>'
        f'<td><input type="number" min="0" max="3" step="1" name="interview.{i}.score" aria-label="score {i}"></td>'
        f'<td><input type="text" name="interview.{i}.note" aria-label="note {i}"></td></tr>'
        for i, item in enumerate(guide.sheet, start=1)
    )
    body.append(
        f'<section class="part checklist sheet" id="sheet"><h2>Scoring sheet</h2><p>Score each line: '
        f"{_e('; '.join(SCALE))}.</p><table><thead><tr><th class=num>#</th><th>What to judge</th><th>Score</th>"
        f"<th>Note</th></tr></thead><tbody>{rows}</tbody></table><p>Record the points: <code>"
        f"{_e(_record_command(report_json, len(guide.sheet)))}</code></p></section>"
    )
    return (
        "<!DOCTYPE html>\n"
        '<html lang="en"><head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f"<title>Interviewer's guide: {_e(guide.who)}</title><style>{CSS}{_EXTRA_CSS}</style></head><body>"
        + "".join(body)
        + "<footer>Built from the grade's run records; the questions come from the kit's question bank.</footer>"
        "</body></html>\n"
    )


def _html_part(part: Part) -> str:
    rows = "".join(
        f'<tr><td><span class="mono">{_e(r.id)}</span></td><td><span class="badge {_e(r.status)}">{_e(r.status)}'
        f"</span>{' <span class=tag>close</span>' if r.outcome == 'borderline' else ''}</td>"
        f"<td class=num>{fmt_points(r.points)} / {fmt_points(r.weight)}</td><td class=num>{_margin(r.margin)}</td>"
        f"<td class=num>{r.attempts}</td><td>{_e(r.unseen or '–')}</td></tr>"
        for r in part.rows
    )
    close = "".join(f"<li><span class=mono>{_e(c)}</span>: {_e(w)}</li>" for c, w in part.close_calls)
    failures = "".join(f"<li><span class=mono>{_e(c)}</span>: {_e(w)}</li>" for c, w in part.failures)
    questions = "".join(
        f'<div class="question" id="q{q.number}"><p class="meta">{q.number}. <span class="mono">{_e(q.criterion)}'
        f'</span> <span class="badge {"failed" if q.outcome == "failed" else "inconclusive" if q.outcome == "borderline" else "passed"}">'
        f"{_e(q.outcome)}</span> the brief's <span class=mono>{_e(q.anchor)}</span></p>"
        f'<p class="ask">{_e(q.text)}</p><p class="good">A good answer covers: {_e(q.good_answer)}</p></div>'
        for q in part.questions
    )
    return (
        f'<section class="part" id="{_e(part.deliverable)}"><h2>{_e(part.deliverable)} '
        f'<span class="points">{_points(part)}</span></h2>'
        "<h3>Verdicts</h3><table><thead><tr><th>Criterion</th><th>Verdict</th><th class=num>Points</th>"
        f"<th class=num>Margin</th><th class=num>Runs</th><th>Unseen variants</th></tr></thead><tbody>{rows}</tbody>"
        "</table><h3>Closest calls</h3>"
        + (f"<ul>{close}</ul>" if close else '<p class="empty">none: every margin is far from its tolerance</p>')
        + "<h3>Failures</h3>"
        + (f"<ul>{failures}</ul>" if failures else '<p class="empty">none</p>')
        + "<h3>Questions</h3>"
        + (questions or '<p class="empty">none</p>')
        + "</section>"
    )
