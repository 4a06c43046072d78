"""The interviewer's guide as data: what the grade found per deliverable, and what to ask about it.

Built from the grade's run records alone (the same judging `grader rejudge` does), so the guide for a
report folder is the same whenever it is written. Per deliverable: every criterion's verdict with its
margin; the closest calls (reruns, margins near the tolerance, failures on the unseen variants only,
inconclusive ones); every failure with its evidence in one line; and the questions the bank has for each
criterion's outcome (failed, borderline, passed), each citing the candidate's own figures. Failed and
borderline criteria get every question the bank has for them; of the passed ones, each deliverable's two
closest calls get one each. The scoring sheet is those questions, in order, and a line for each of the first
live exercises suggested.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from grader.criteria.verdict import UNSEEN_FAILED, UNSEEN_PASSED, Verdict
from grader.grading.judging import judge
from grader.grading.rejudge import grade_of
from grader.grading.sections import SECTIONS
from grader.grading.side_by_side import side_by_side
from grader.interview.figures import FIGURES, Seen, Values
from grader.outcome import CriterionResult, edition_fit_sentence
from grader.records.book import RecordBook
from grader.rubric import Criterion, Rubric
from grader.rubric.live_pool import LivePool
from grader.rubric.questions import Question, QuestionBank

__all__ = [
    "LIVE_ON_SHEET",
    "PASSED_PER_DELIVERABLE",
    "Asked",
    "Guide",
    "GuideRow",
    "Live",
    "Part",
    "build_guide",
    "evidence_line",
]

#: Passed criteria asked about in each deliverable: its closest calls.
PASSED_PER_DELIVERABLE = 2
#: Live exercises on the scoring sheet: the first suggested (an interview has time for one or two).
LIVE_ON_SHEET = 2
_EVIDENCE_CHARS = 260
_SHEET_CHARS = 140
GENERIC = Question(
    "no-question",
    "",
    "",
    ("failed", "borderline", "passed"),
    "evidence",
    "Walk me through what happened here: {evidence}",
    "The bank has no question for this criterion and outcome: judge the answer against the criterion's text.",
)


@dataclass
class GuideRow:
    id: str
    title: str
    status: str
    outcome: str  # failed | borderline | passed
    points: float
    weight: float
    margin: float | None
    attempts: int
    unseen: str | None  # the unseen variants' verdict, when the criterion had variants
    evidence: str  # one line: the failure, the close call, or the verdict


@dataclass
class Asked:
    number: int  # its line on the scoring sheet (interview.N)
    criterion: str
    outcome: str
    question: str  # the bank's id
    anchor: str
    text: str  # the question with the candidate's figures in it
    good_answer: str
    cites: Values  # the figures it quotes


@dataclass
class Part:
    deliverable: str
    points: float
    weight: float
    rows: list[GuideRow] = field(default_factory=list)
    close_calls: list[tuple[str, str]] = field(default_factory=list)  # (criterion, why)
    failures: list[tuple[str, str]] = field(default_factory=list)  # (criterion, evidence)
    questions: list[Asked] = field(default_factory=list)


@dataclass
class Live:
    name: str
    title: str
    deliverable: str
    time_box_min: float
    why: str


@dataclass
class Guide:
    who: str
    submission: str
    seed: int
    started: str
    score: float
    max_score: float
    sandbox_note: str
    parts: list[Part]
    live: list[Live]
    edition: str = ""  # what the grade followed: "contract 2, edition default, kit 2.0.0" (empty: not recorded)

    @property
    def asked(self) -> list[Asked]:
        return [q for part in self.parts for q in part.questions]

    @property
    def sheet(self) -> list[str]:
        """The scoring sheet's items, in order: each question, then each live exercise."""
        items = [f"Question {q.number} ({q.criterion}, {q.outcome}): {_clip(q.text, _SHEET_CHARS)}" for q in self.asked]
        live = self.live[:LIVE_ON_SHEET]
        return items + [f"Live exercise {e.name} ({e.title}): the fix and the explanation" for e in live]


def _outcome(result: CriterionResult, band: tuple[float, float]) -> str:
    if result.status == "inconclusive":
        return "borderline"
    if result.status in ("failed", "skipped"):
        return "failed"
    close = result.margin is not None and band[0] <= result.margin <= band[1]
    return "borderline" if close or result.attempts > 1 else "passed"


def _problem_lines(output: str) -> list[str]:
    out = []
    for line in output.splitlines():
        text = line.strip().removeprefix("- ").strip()
        if not text or text in (UNSEEN_PASSED, UNSEEN_FAILED) or text.startswith("INCONCLUSIVE:"):
            continue
        if text.endswith(":") or text.split(" ", 1)[0].isdigit() and "problem(s)" in text:
            continue
        out.append(text)
    return out


def _clip(text: str, chars: int = _EVIDENCE_CHARS) -> str:
    text = " ".join(text.split())
    return text if len(text) <= chars else text[: chars - 1] + "…"


def evidence_line(result: CriterionResult, outcome: str, *, public_passed: bool, first_run: str = "") -> str:
    """One line that says why: the first problem the check named (the unseen variants' when only they failed),
    with why a borderline answer was close (and what its first run found, when it was run again), or the
    verdict of a passed one."""
    lines = _problem_lines(result.output)
    scenario = result.scenario.split(",")[0]
    if outcome == "failed" and public_passed and result.unseen is not None:
        found = _problem_lines(result.unseen.output)
        return _clip("on the unseen variants only: " + (found[0] if found else "failed"))
    first = lines[0] if lines else result.status
    if first.startswith("request ") and scenario:
        first = f"{scenario}: {first}"
    if outcome != "borderline":
        return _clip(first)
    why = []
    if result.status == "inconclusive":  # the evidence first: the reason it stayed undecided can be long
        reason = result.output.splitlines()[0].removeprefix("INCONCLUSIVE: ").split("; a person")[0]
        return _clip(f"{first}; left undecided: {reason}")
    if result.attempts > 1:
        found = _problem_lines(first_run)
        return _clip(
            f"run twice; the first run found: {found[0] if found else 'a borderline answer'}; the rerun: {first}"
        )
    if result.margin is not None:
        why.append(f"margin {result.margin:.2f} of its tolerance ({result.tolerance or 'stated in its text'})")
    return _clip("; ".join(why) + f": {first}")


class _Records:
    """The loaded records a criterion was judged from, each loaded once."""

    def __init__(self, book: RecordBook) -> None:
        self.book, self.loaded = book, dict[str, Any]()

    def of(self, criterion: Criterion, attempt: int) -> list[Any]:
        section = SECTIONS[criterion.deliverable]
        keys = section.keys(criterion, attempt) or section.keys(criterion, 1) or ()
        out = []
        for key in keys:
            record = self.book.get(key)
            if record is None:
                continue
            if key not in self.loaded:
                self.loaded[key] = section.load(record)
            out.append(self.loaded[key])
        return out


def _verdict(criterion: Criterion, runs: list[Any], rubric: Rubric) -> Verdict | None:
    """What the check says of these runs alone: the public runs without their variants, or a rerun's first run."""
    return judge(criterion, SECTIONS[criterion.deliverable], runs, rubric) if runs else None


def _ask(questions: Sequence[Question], seen: Seen, *, every: bool) -> list[tuple[Question, Values]]:
    """The questions whose figures the records give, with those figures: every one, or the first."""
    out = []
    for question in questions:
        figure = FIGURES.get(question.figure)
        values = figure.of(seen) if figure is not None else None
        if values is not None:
            out.append((question, values))
            if not every:
                break
    return out


def build_guide(
    book: RecordBook,
    rubric: Rubric,
    bank: QuestionBank,
    pool: LivePool | None,
    *,
    who: str,
    submission: str,
) -> Guide:
    """The guide for the grade whose records are in `book`, judged with `rubric`."""
    grade = grade_of(book, rubric)
    records = _Records(book)
    band = rubric.judging.borderline
    parts: dict[str, Part] = {}
    passed: dict[str, list[tuple[float, GuideRow, Seen]]] = {}
    for result in grade.criteria:
        criterion = rubric.criterion(result.id)
        part = parts.setdefault(result.deliverable, Part(result.deliverable, 0.0, 0.0))
        part.points, part.weight = part.points + result.score, part.weight + result.weight
        outcome = _outcome(result, band)
        runs = records.of(criterion, result.attempts) if result.status != "skipped" else []
        alone = _verdict(criterion, runs, rubric) if outcome == "failed" and result.unseen is not None else None
        public = alone is not None and alone.passed  # failed on the unseen variants only
        first_run = _verdict(criterion, records.of(criterion, 1), rubric) if result.attempts > 1 else None
        first = first_run.output if first_run is not None else ""
        failing: tuple[str, ...] = ()
        if outcome != "passed" and result.deliverable in ("loadgen", "gateway"):
            failing = tuple(side_by_side(book, rubric, criterion, result)[1])
        row = GuideRow(
            result.id,
            result.title,
            result.status,
            outcome,
            result.score,
            result.weight,
            result.margin,
            result.attempts,
            result.unseen.status if result.unseen else None,
            evidence_line(result, outcome, public_passed=public, first_run=first),
        )
        part.rows.append(row)
        seen = Seen(criterion, result, runs, row.evidence, failing)
        if outcome == "failed":
            part.failures.append((row.id, row.evidence))
        if outcome == "borderline" or public:
            part.close_calls.append((row.id, row.evidence))
        if outcome == "passed":
            passed.setdefault(result.deliverable, []).append((result.margin or 0.0, row, seen))
            continue
        asked = _ask(bank.matching(result.id, outcome), seen, every=True) or _ask([GENERIC], seen, every=True)
        part.questions += [_asked(q, values, row, outcome) for q, values in asked]
    for deliverable, rows in passed.items():
        closest = sorted(rows, key=lambda r: -r[0])[:PASSED_PER_DELIVERABLE]
        parts[deliverable].close_calls += [
            (row.id, f"passed, at {margin:.2f} of its tolerance: {row.evidence}")
            for margin, row, _ in closest
            if margin
        ]
        for _, row, seen in closest:
            asked = _ask(bank.matching(row.id, "passed"), seen, every=False)
            parts[deliverable].questions += [_asked(q, values, row, "passed") for q, values in asked]
    ordered = list(parts.values())
    number = 0
    for part in ordered:
        part.close_calls.sort(key=lambda c: -(next(r.margin or 0.0 for r in part.rows if r.id == c[0])))
        for q in part.questions:
            number += 1
            q.number = number
    return Guide(
        who,
        submission,
        grade.seed,
        grade.started,
        grade.score,
        grade.max_score,
        grade.sandbox_note,
        ordered,
        _live(pool, grade.criteria),
        _edition(grade.edition),
    )


def _edition(edition: dict[str, Any]) -> str:
    if not edition:
        return ""
    fit = edition_fit_sentence(edition)
    return f"contract {edition.get('contract')}, edition {edition.get('name')}, kit {edition.get('kit')}" + (
        f" ({fit})" if fit else ""
    )


def _asked(question: Question, values: Values, row: GuideRow, outcome: str) -> Asked:
    return Asked(0, row.id, outcome, question.id, question.anchor, question.text(values), question.good_answer, values)


def _live(pool: LivePool | None, results: list[CriterionResult]) -> list[Live]:
    """Every live exercise of a deliverable the grade judged, those on criteria the candidate passed first:
    they put in front of working code what the grade never ran."""
    if pool is None:
        return []
    graded = {r.deliverable for r in results}
    status = {r.id: r.status for r in results}
    out = []
    for exercise in pool.exercises.values():
        if exercise.deliverable not in graded:
            continue
        known = [c for c in exercise.criteria if c in status]
        passed = [c for c in known if status[c] == "passed"]
        why = (
            f"goes past {', '.join(passed)}, which the grade passed"
            if passed
            else f"its own checks ({', '.join(exercise.criteria)}), on the {exercise.deliverable} deliverable"
        )
        out.append(Live(exercise.name, exercise.title, exercise.deliverable, exercise.time_box_min, why))
    return sorted(out, key=lambda e: ("goes past" not in e.why, e.name))
