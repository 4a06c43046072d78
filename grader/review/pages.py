"""The round's pages, server-rendered: the layout every page shares, the ranking, the item analysis, errors.

Plain HTML with one stylesheet and one script of the app's own (`/static/`), no outside address: the page
works offline. Every text from a report is escaped here; in a blind review the finished page then passes
through the round's redactor (blinding.py) before it leaves.
"""

from __future__ import annotations

import csv
import html

from grader.reports.text import clean, fmt_points
from grader.review.round_view import Candidate, ReviewRound, Similar
from grader.round.analysis_page import ITEMS_CSV
from grader.round.summary import INDEX_NAME

__all__ = ["e", "error_page", "items_page", "layout", "points", "round_page"]


def e(value: object) -> str:
    return html.escape(clean(value), quote=True)


def points(got: float | None, most: float | None) -> str:
    return "–" if got is None else f"{fmt_points(got)} / {fmt_points(most or 0.0)}"


def layout(title: str, body: str, review: ReviewRound, *, reviewer: str) -> str:
    blind = (
        '<div class="banner blind">Blind review: candidates are named by code; revealing one is recorded.</div>'
        if review.blinding.active
        else ""
    )
    items = '<a href="/items">Item analysis</a>' if not review.single else ""
    return (
        "<!DOCTYPE html>\n<html lang=en><head><meta charset=utf-8>"
        "<meta name=viewport content='width=device-width, initial-scale=1'>"
        f"<title>{e(title)}</title><link rel=icon href='data:,'><link rel=stylesheet href=/static/review.css>"
        "<script src=/static/review.js defer></script></head>"
        f"<body data-reviewer='{e(reviewer)}'>{blind}<nav class=top><a href='/'>Round</a>{items}"
        "<label class=reviewer>Reviewer <input id=reviewer autocomplete=off maxlength=80></label></nav>"
        f"{body}</body></html>\n"
    )


def error_page(status: int, message: str) -> str:
    """A refusal as a page: what was wrong, in one line, and the way back."""
    return (
        "<!DOCTYPE html>\n<html lang=en><head><meta charset=utf-8><title>"
        f"{status}</title><link rel=stylesheet href=/static/review.css></head><body><main>"
        f"<h1>{status}</h1><p class=message>{e(message)}</p><p><a href='/'>Back to the round</a></p>"
        "</main></body></html>\n"
    )


def _unseen(entry: Candidate) -> tuple[str, str]:
    """(cell, sort key) of the unseen variants' verdicts."""
    if entry.unseen is None:
        return "<span class=muted>no records</span>", ""
    if isinstance(entry.unseen, str):
        return "<span class=muted>being judged (reload)</span>", ""
    failed = sorted(c for c, s in entry.unseen.items() if s != "passed")
    if not entry.unseen:
        return "<span class=muted>none</span>", ""
    if not failed:
        return f"<span class='badge passed'>all {len(entry.unseen)} passed</span>", "0"
    listed = ", ".join(failed[:4]) + (f" and {len(failed) - 4} more" if len(failed) > 4 else "")
    badge = f"<span class='badge failed' title='{e(listed)}'>{len(failed)} of {len(entry.unseen)} not passed</span>"
    return f"{badge}<div class=small>{e(listed)}</div>", str(len(failed))


def _similar(entry: Candidate) -> str:
    """One line per submission matched (a candidate, or a leak), its deliverables and their scores, linking the
    pair's side-by-side page."""
    by_other: dict[str, list[Similar]] = {}
    for s in entry.similar:
        by_other.setdefault(s.other, []).append(s)
    cells = []
    for other, pairs in list(by_other.items())[:3]:
        listed = ", ".join(f"{s.deliverable} {s.score:.0%}" for s in pairs)
        what = f"{other}{' (leak)' if pairs[0].leak else ''}: {max(s.score for s in pairs):.0%}" + (
            f" in {len(pairs)} deliverables" if len(pairs) > 1 else f" {pairs[0].deliverable}"
        )
        href = next((s.href for s in pairs if s.href), None)
        cells.append(
            f"<a href='/files/{e(href)}' title='{e(listed)}'>{e(what)}</a>"
            if href
            else f"<span title='{e(listed)}'>{e(what)}</span>"
        )
    more = f" and {len(by_other) - 3} more" if len(by_other) > 3 else ""
    return "<br>".join(cells) + more


def _edition(entry: Candidate) -> str:
    if entry.edition is None:
        return "—"
    edition = entry.edition
    detail = ", ".join(x for x in (f"contract {edition.contract}" if edition.contract else "", edition.kit) if x)
    return f"<span title='{e(detail)}'>{e(edition.name)}</span>"


def round_page(review: ReviewRound, entries: list[Candidate], *, reviewer: str) -> str:
    deliverables: list[str] = []
    for entry in entries:
        deliverables += [d for d in entry.deliverables if d not in deliverables]
    head = (
        "<tr><th class=num data-sort=num>#</th><th data-sort=text>Candidate</th>"
        "<th class=num data-sort=num>Score</th><th class=num data-sort=num>Automated</th>"
        "<th class=num data-sort=num>Interview</th>"
        + "".join(f"<th class=num data-sort=num>{e(d)}</th>" for d in deliverables)
        + "<th data-sort=num>Unseen variants</th><th data-sort=text>Similarity</th><th data-sort=text>Edition</th>"
        "<th data-sort=text>Decision</th><th data-sort=text>Flags</th></tr>"
    )
    body = []
    for entry in entries:
        row = entry.row
        interview = review.interview_points(row)
        unseen, unseen_key = _unseen(entry)
        flags = (
            (["UNSANDBOXED"] if not row.sandboxed else [])
            + ([f"{len(row.inconclusive)} inconclusive"] if row.inconclusive else [])
            + ([f"{row.contract_problems} contract problems"] if row.contract_problems else [])
            + (["similar"] if any(not s.leak for s in entry.similar) else [])
            + (["leak"] if any(s.leak for s in entry.similar) else [])
        )
        cells = "".join(
            f"<td class=num data-key='{entry.deliverables[d][0]:g}'>{points(*entry.deliverables[d])}</td>"
            if d in entry.deliverables
            else "<td class=num data-key=-1>–</td>"
            for d in deliverables
        )
        decision = (
            f"<span class='decision {e(entry.decision)}' title='{e(entry.decision_reason)}'>{e(entry.decision)}</span>"
            if entry.decision
            else ""
        )
        body.append(
            f"<tr data-decision='{e(entry.decision or 'none')}'><td class=num data-key={row.rank}>{row.rank}</td>"
            f"<td data-key='{e(entry.shown)}' class=nowrap><a href='/c/{e(entry.key)}'>{e(entry.shown)}</a></td>"
            f"<td class=num data-key='{row.score:g}'>{points(row.score, row.max_score)}</td>"
            f"<td class=num data-key='{entry.automated:g}'>{points(entry.automated, entry.automated_max)}</td>"
            f"<td class=num data-key='{interview[0] if interview else -1:g}'>"
            f"{points(*interview) if interview else '–'}</td>{cells}"
            f"<td data-key='{unseen_key}'>{unseen}</td><td class=similar>{_similar(entry)}</td><td>{_edition(entry)}</td>"
            f"<td>{decision}</td><td>{e(', '.join(flags))}</td></tr>"
        )
    summary = (
        f" <a href='/files/{INDEX_NAME}'>The round's summary page</a>"
        if (review.root / INDEX_NAME).is_file() and not review.single
        else ""
    )
    export = (
        "<form method=post action=/export class=inline><button type=submit id=export>Export grades.csv</button></form>"
        if not review.single
        else ""
    )
    text = (
        f"<header><h1>Round: {len(entries)} candidate{'s' if len(entries) != 1 else ''}</h1>"
        "<p>Ranked by the automated score and, once entered, the interview's points (a person's points count in "
        "the score). Click a column's head to sort; type to filter."
        f"{summary}</p>{export}</header>"
        "<main class=wide><p class=filters><input id=filter type=search placeholder='Filter: name, flag, edition' "
        "autocomplete=off> <select id=decision-filter><option value=''>every decision</option>"
        "<option value=none>none yet</option><option>advance</option><option>hold</option><option>reject</option>"
        f"</select></p><div class=table-wrap-wide><table id=ranking><thead>{head}</thead>"
        f"<tbody>{''.join(body)}</tbody></table></div></main>"
    )
    return layout(f"Review: {len(entries)} candidates", text, review, reviewer=reviewer)


def items_page(review: ReviewRound, *, reviewer: str) -> str:
    """The round's item analysis, as its summary wrote it (items.csv), one click from the ranking."""
    path = review.root / ITEMS_CSV
    if review.single or not path.is_file():
        body = (
            "<main><h1>Item analysis</h1><p class=empty>This round has no items.csv yet: run grader grade-many "
            "--merge on it, or export from the round page.</p></main>"
        )
        return layout("Item analysis", body, review, reviewer=reviewer)
    with path.open(encoding="utf-8", newline="") as handle:
        rows = list(csv.reader(handle))
    head, data = (rows[0], rows[1:]) if rows else ([], [])
    table = (
        "<table id=items><thead><tr>"
        + "".join(f"<th data-sort=text>{e(h)}</th>" for h in head)
        + "</tr></thead><tbody>"
        + "".join("<tr>" + "".join(f"<td>{e(c)}</td>" for c in r) + "</tr>" for r in data)
        + "</tbody></table>"
    )
    flagged = sum(1 for r in data if r and r[-1])
    body = (
        f"<header><h1>Item analysis: {flagged} of {len(data)} criteria flagged</h1><p>For each criterion over the "
        "candidates graded on it: the pass rate, the mean points and the discrimination (its points against the "
        "rest of each candidate's total). Flagged: everyone passes, everyone fails, or a negative discrimination. "
        f"From <a href='/files/{ITEMS_CSV}'>{ITEMS_CSV}</a>; the plots are on "
        f"<a href='/files/{INDEX_NAME}'>the round's summary page</a>.</p></header><main class=wide>{table}</main>"
    )
    return layout("Item analysis", body, review, reviewer=reviewer)
