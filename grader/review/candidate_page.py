"""A candidate's page: the interviewer's guide and their report on one side, the scoring sheet as a form, the
decision and the live exercises on the other.

The sheet's form works without a script (its Save button posts it); with the page's script it saves as the
interviewer types (review.js), and keeps what was typed in the browser until the server confirms it.
"""

from __future__ import annotations

from collections.abc import Sequence

from grader.reports import FILE_NAMES
from grader.review.live_jobs import LIVE, LiveJob
from grader.review.pages import e, layout, points
from grader.review.round_view import Candidate, ReviewRound
from grader.review.sheet import DECISIONS, MAX_POINTS, Line, Sheet
from grader.rubric.live_pool import Exercise

__all__ = ["CandidateView", "candidate_page"]


class CandidateView:
    """What the page shows besides the entry: the sheet (or why there is none), the live exercises."""

    def __init__(
        self,
        entry: Candidate,
        sheet: Sheet | None,
        guide_note: str | None,
        exercises: Sequence[Exercise],
        exercises_note: str | None,
        runs: Sequence[dict[str, object]],
        running: LiveJob | None,
        can_run: bool,
    ) -> None:
        self.entry, self.sheet, self.guide_note = entry, sheet, guide_note
        self.exercises, self.exercises_note, self.runs = exercises, exercises_note, runs
        self.running, self.can_run = running, can_run


def _score_select(line: Line) -> str:
    values = [str(n) for n in range(MAX_POINTS + 1)]
    options = ([] if line.score is not None else ["<option value=''>–</option>"]) + [
        f"<option{' selected' if line.shown == v else ''}>{v}</option>" for v in values
    ]
    if line.score is not None and line.shown not in values:  # recorded elsewhere (human-score 2.5/4): kept as is
        options.append(
            f"<option value='{e(line.shown)}' selected>{e(points(line.score, line.max_score))} (recorded)</option>"
        )
    return f"<select name='score:{e(line.id)}' aria-label='points for {e(line.id)}'>{''.join(options)}</select>"


def _sheet(key: str, sheet: Sheet, round_id: str) -> str:
    rows = "".join(
        f"<tr><td class=mono>{e(line.id)}</td><td><div class=item>{e(line.item)}</div>"
        f"<textarea name='note:{e(line.id)}' rows=2 placeholder='A note' maxlength=4000>{e(line.note)}</textarea></td>"
        f"<td class=num>{_score_select(line)}</td></tr>"
        for line in sheet.lines
    )
    choices = (
        "".join(
            f"<label><input type=radio name=decision value='{d}'{' checked' if sheet.decision == d else ''}> {d}</label>"
            for d in DECISIONS
        )
        + f"<label><input type=radio name=decision value=''{'' if sheet.decision else ' checked'}> none yet</label>"
    )
    saved = (
        f"Saved by {e(sheet.saved_by)} at {e(sheet.saved_at)}."
        if sheet.saved_by
        else "Nothing saved from this page yet."
    )
    decided = (
        f"<p class=small>Decided by {e(sheet.decided_by)} at {e(sheet.decided_at)}.</p>"
        if sheet.decision and sheet.decided_by
        else ""
    )
    return (
        f"<form id=sheet method=post action='/c/{e(key)}/sheet' data-candidate='{e(key)}' data-round='{e(round_id)}'>"
        f"<input type=hidden name=version value='{e(sheet.version)}'><input type=hidden name=reviewer value=''>"
        "<h2>Scoring sheet</h2><p class=small>Each line 0 to 3, as the guide says; saved as you go, to where "
        "<code>grader human-score</code> writes.</p>"
        "<table class=sheet><thead><tr><th>#</th><th>Line</th><th class=num>Points</th></tr></thead>"
        f"<tbody>{rows}</tbody></table>"
        f"<fieldset class=decision><legend>Decision</legend><div class=choices>{choices}</div>"
        f"<textarea name=reason rows=2 placeholder='The reason' maxlength=4000>{e(sheet.reason)}</textarea>{decided}"
        "</fieldset>"
        f"<p id=sheet-status data-state=idle role=status>{saved}</p>"
        "<p><button type=submit id=sheet-save>Save</button></p></form>"
    )


def _live(key: str, view: CandidateView, review: ReviewRound) -> str:
    name = view.entry.row.name
    if view.exercises_note:
        return f"<section id=live-panel><h2>Live exercises</h2><p class=empty>{e(view.exercises_note)}</p></section>"
    options = "".join(
        f"<option value='{e(x.name)}'>{e(x.name)}: {e(x.title)} ({e(x.deliverable)}, {x.time_box_min:g} min)</option>"
        for x in view.exercises
    )
    if view.can_run:
        job = f" data-job='{e(view.running.id)}'" if view.running else ""
        start = (
            f"<form id=live method=post action='/c/{e(key)}/live' data-candidate='{e(key)}'{job}>"
            f"<select name=exercise aria-label=exercise>{options}</select> "
            "<button type=submit id=live-start>Start</button></form>"
        )
    else:
        start = (
            "<p class=empty>The candidate's submission is not on this machine: start grader review with "
            "--submissions DIR (their folders or archives, named as their report folders).</p>"
        )
    runs = "".join(
        f"<tr><td>{e(run.get('exercise'))}</td><td class=num>{e(run.get('run'))}</td><td>{e(run.get('started'))}</td>"
        f"<td class=num>{e(points(_num(run.get('score')), _num(run.get('max_score'))))}</td>"
        f"<td><a href='/files/{e(review.relative(name, LIVE, str(run.get('exercise')), str(run.get('folder')), FILE_NAMES['html']))}'>report</a></td></tr>"
        for run in view.runs
    )
    table = (
        "<table class=runs><thead><tr><th>Exercise</th><th class=num>Run</th><th>Started</th>"
        f"<th class=num>Score</th><th></th></tr></thead><tbody>{runs}</tbody></table>"
        if runs
        else "<p class=empty>No live run recorded yet.</p>"
    )
    return (
        "<section id=live-panel><h2>Live exercises</h2><p class=small>One the grade never ran, on the candidate's own "
        "code in the sandbox; recorded as <code>grader live</code> records it.</p>"
        f"{start}<p id=live-state data-state=idle role=status></p><pre id=live-log hidden></pre>{table}</section>"
    )


def _num(value: object) -> float | None:
    return float(value) if isinstance(value, (int, float)) else None


def candidate_page(review: ReviewRound, view: CandidateView, *, reviewer: str, round_id: str) -> str:
    entry, sheet = view.entry, view.sheet
    row = entry.row
    key = entry.key
    report = "/files/" + review.relative(row.name, FILE_NAMES["html"])
    guide = "/files/" + review.relative(row.name, sheet.guide) if sheet and sheet.guide else None
    reveal = (
        f"<form method=post action='/c/{e(key)}/reveal' id=reveal class=inline><button type=submit>Reveal the name"
        "</button> <span class=small>(recorded: who and when)</span></form>"
        if review.blinding.is_hidden(row.name)
        else ""
    )
    edition = entry.edition.name if entry.edition else "—"
    interview = review.interview_points(row)
    facts = (
        f"<p class=facts-line><span>Rank <b>{row.rank}</b></span><span>Score <b>{points(row.score, row.max_score)}"
        f"</b></span><span>Automated <b>{points(entry.automated, entry.automated_max)}</b></span>"
        f"<span>Interview <b id=interview-points>{points(*interview) if interview else 'not scored yet'}</b></span>"
        f"<span>Edition <b>{e(edition)}</b></span></p>"
    )
    tabs = (
        "<div class=tabs>"
        + (f"<a href='{e(guide)}' data-frame=reader class=tab target=reader>Guide</a>" if guide else "")
        + f"<a href='{e(report)}' data-frame=reader class=tab target=reader>Report</a>"
        + (f"<a href='{e(guide)}' target=_blank>guide in a new tab</a>" if guide else "")
        + f"<a href='{e(report)}' target=_blank>report in a new tab</a></div>"
    )
    reader = f"<iframe name=reader id=reader src='{e(guide or report)}' title='guide and report'></iframe>"
    if sheet is not None and sheet.lines:
        form = _sheet(key, sheet, round_id)
    else:
        form = (
            "<h2>Scoring sheet</h2><p class=empty>" + e(view.guide_note or "The guide has no scoring sheet.") + "</p>"
        )
    body = (
        f"<header class=candidate><h1>{e(entry.shown)}</h1>{facts}{reveal}</header>"
        f"<main class=desk><section class=reader>{tabs}{reader}</section>"
        f"<section class=side>{form}{_live(key, view, review)}</section></main>"
    )
    return layout(f"Review: {entry.shown}", body, review, reviewer=reviewer)
