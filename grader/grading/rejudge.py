"""`grader rejudge`: judge a grade's stored run records again, with the current or an overridden rubric.

Nothing of the candidate's runs: the records in `REPORT_DIR/runs/` are the facts, the rubric the
judgement. A hiring team that changes a tolerance or a weight after a round re-judges every grade
in a fraction of a second each (`grader grade-many --rejudge` does a whole round). What the grade
could not judge (a broken contract, the grader's own failure) is carried over as it was; a
criterion whose records no longer cover it (the rubric gave it another scenario) is inconclusive
and says so.

A grade made with a rubric of its own (a live exercise's, grader/live/) keeps that rubric beside its records
(`runs/rubric.yaml`): it is judged again with it, unless another is given.
"""

from __future__ import annotations

import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

from grader.criteria.catalog import registered
from grader.criteria.memo import HUMAN_CHECKLIST
from grader.criteria.verdict import Verdict
from grader.grading.grade import RUNS
from grader.grading.judging import (
    Variant,
    decide,
    judge,
    needs_rerun,
    not_in_brief,
    result_of,
    skipped,
    unjudged,
    with_variants,
)
from grader.grading.sections import NO_VARIANTS, SECTIONS, Section, Varied
from grader.outcome import CriterionResult, Grade
from grader.records.book import RecordBook, RecordError
from grader.rubric import Criterion, Rubric, RubricError, load_rubric

__all__ = ["KEPT_RUBRIC", "RecordError", "grade_of", "rejudge"]

KEPT_RUBRIC = "rubric.yaml"  # in runs/: the rubric a grade was made with, when it is not the kit's


def rejudge(
    report_dir: Path,
    *,
    rubric: Path | None = None,
    override: Path | None = None,
    out: Path | None = None,
    echo: Callable[[str], None] | None = None,
) -> Grade:
    """Judge `report_dir`'s records again and write the three reports to `out` (default: `report_dir`).

    Raises RecordError (no records, another version) or RubricError, each one line naming the file."""
    report_dir, out = Path(report_dir), Path(out) if out is not None else Path(report_dir)
    book = RecordBook.read(report_dir / RUNS)
    kept = report_dir / RUNS / KEPT_RUBRIC
    current = load_rubric(rubric or (kept if kept.is_file() else None), override=override, checks=registered())
    unknown = [c for c in book.index["criteria"] if not any(k.id == c for k in current.criteria)]
    if unknown:
        raise RubricError(f"{current.path}: has no criterion {unknown[0]!r}, which the grade in {report_dir} judged")
    from grader.reports.text import progress

    grade = grade_of(book, current, report=progress(echo) if echo else None)
    from grader.reports import FILE_NAMES, restore_person_part, write_reports

    # a person's part (checklist points, the interview's sheet): --out's own report's (a re-judge in place), else
    # the graded folder's
    person = _person(out / FILE_NAMES["json"]) or _person(report_dir / FILE_NAMES["json"])
    if out.resolve() != report_dir.resolve():
        shutil.copytree(report_dir / RUNS, out / RUNS, dirs_exist_ok=True)
        guide = Path(str((person or {}).get("interview_guide") or "")).parts[:1]
        if guide and (report_dir / guide[0]).is_dir() and guide[0] not in ("..", RUNS):
            shutil.copytree(report_dir / guide[0], out / guide[0], dirs_exist_ok=True)  # the interviewer's guide
    write_reports(grade, out)
    restore_person_part(out / FILE_NAMES["json"], person)  # a person's points and the interview's sheet survive
    return grade


def _person(report_json: Path) -> dict[str, Any] | None:
    """What a person added to an earlier report.json (points, an interview's sheet), or None when nothing."""
    from grader.reports import person_part

    part = person_part(report_json)
    if part and (part["interview_guide"] or any(e.get("score") is not None for e in part["checklist"])):
        return part
    return None


def grade_of(book: RecordBook, rubric: Rubric, *, report: Callable[[CriterionResult], None] | None = None) -> Grade:
    """The grade the records in `book` give under `rubric`, as the brief the grade followed has it (its contract
    version): every criterion the grade judged, judged again; what it could not judge carried over as it was."""
    index = book.index
    rubric = rubric.for_grade(index)
    loaded: dict[str, Any] = {}
    results = []
    for criterion_id in index["criteria"]:
        criterion = rubric.criterion(criterion_id)
        kept = index["not_judged"].get(criterion_id)
        if not criterion.in_brief:
            result = not_in_brief(criterion, rubric.contract)
        elif kept is not None:
            result = (
                skipped(criterion, kept["output"])
                if kept["status"] == "skipped"
                else unjudged(criterion, kept["output"].removeprefix("INCONCLUSIVE: "), logs=kept["logs"])
            )
        else:
            result = _judged(criterion, rubric, book, loaded, index["durations"].get(criterion_id, 0.0))
        if report is not None:
            report(result)
        results.append(result)
    return Grade(
        submission=index["submission"],
        candidate=index["candidate"],
        seed=index["seed"],
        started=index["started"],
        duration_s=index["duration_s"],
        sandboxed=index["sandboxed"],
        sandbox_note=index["sandbox_note"],
        rubric=str(rubric.path) + (" (public criteria only)" if index["public_only"] else ""),
        contract_problems=[p for lines in index["contract_problems"].values() for p in lines],
        criteria=results,
        human_checklist=list(HUMAN_CHECKLIST) if any(c.deliverable == "memo" for c in results) else [],
        inherent_s=float(index.get("inherent_s", 0.0)),
        section_s=dict(index.get("section_s", {})),
        edition=dict(index.get("edition") or {}),
    )


def _judged(
    criterion: Criterion, rubric: Rubric, book: RecordBook, loaded: dict[str, Any], duration_s: float
) -> CriterionResult:
    """Judged as the grade judged it, from its records: attempt 2 read back when attempt 1 was borderline."""
    section = SECTIONS[criterion.deliverable]
    varied = book.index.get("variants", NO_VARIANTS)

    def attempt(n: int) -> Verdict | None:
        objects = _read(section, section.keys(criterion, n), book, loaded)
        verdict = judge(criterion, section, objects, rubric) if objects is not None else None
        if verdict is None:
            return None
        return with_variants(verdict, section, rubric, _stored_variant(section, criterion, n, varied, book, loaded))

    first = attempt(1)
    if first is None:
        return unjudged(
            criterion,
            f"no run record covers {criterion.id} (its scenarios or cases are not the ones graded); grade again",
        )
    decision = decide(first, attempt(2) if needs_rerun(first, rubric) else None, rubric)
    return result_of(criterion, decision, duration_s=duration_s)


def _read(section: Section, keys: tuple[str, ...] | None, book: RecordBook, loaded: dict[str, Any]) -> list[Any] | None:
    """The loaded records of `keys`, or None when one is not there."""
    if keys is None or any(book.get(k) is None for k in keys):
        return None
    for key in keys:
        if key not in loaded:
            loaded[key] = section.load(book.records[key])
    return [loaded[k] for k in keys]


def _stored_variant(
    section: Section, criterion: Criterion, attempt: int, varied: Varied, book: RecordBook, loaded: dict[str, Any]
) -> Variant | None:
    objects = _read(section, section.variant_keys(criterion, attempt, varied) or None, book, loaded)
    judged = section.variant_criterion(criterion, objects) if objects else None
    return None if judged is None or not objects else (judged, objects)
