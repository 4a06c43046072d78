"""`grader grade`: turn a submission into a grade and its reports, whatever the submission does.

The order: unpack (if an archive), read the rubric, check the contract (`check_submission`: a problem
skips only what it says it skips), then hand the rest to the section runner (grading/runner.py), which
runs the sections in sandboxes, keeping a record of every run in `runs/`, and judges each criterion
from those records; then write the reports. The only
errors that stop a grade are the grader's own (a bad rubric, an unwritable output folder);
everything a submission does wrong ends up in the report.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import secrets
import tempfile
import time
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any

from grader.contract import ContractCheck, ContractError, Problem, Submission, check_submission, memo_front_matter
from grader.criteria.catalog import registered
from grader.criteria.memo import HUMAN_CHECKLIST
from grader.grading.edition_fit import fitted_edition
from grader.grading.judging import not_in_brief, skipped
from grader.grading.request import GradeRequest, UnseenMaterial, unseen_material
from grader.grading.runner import Ran, SectionRunner
from grader.grading.sections import NO_VARIANTS, SECTIONS
from grader.outcome import CriterionResult, Grade
from grader.records.book import RecordBook
from grader.reports.text import progress
from grader.rubric import Criterion, Rubric, RubricError, load_rubric
from grader.rubric.editions import EditionError, check_name
from grader.shared.contracts import DEFAULT_EDITION, Edition

__all__ = [
    "RUNS",
    "GradeRequest",
    "UnseenMaterial",
    "draw_seed",
    "grade",
    "unseen_material",
]

RUNS = "runs"


def draw_seed() -> int:
    """A fresh seed for a grade or a round: the unseen variants' draws of one round say nothing of the next's."""
    return secrets.randbelow(2**31)


@contextlib.contextmanager
def _submission_folder(path: Path) -> Iterator[tuple[Path | None, str]]:
    """The folder to grade, or None and why (an archive the grader refuses to unpack)."""
    if path.is_dir():
        yield path, ""
        return
    from grader.grading.archive import ArchiveError, unpack

    with tempfile.TemporaryDirectory(prefix="grader-unpack-") as tmp:
        try:
            folder = unpack(path, Path(tmp))
        except ArchiveError as exc:
            yield None, str(exc)
            return
        yield folder, ""


def _selected(rubric: Rubric, request: GradeRequest) -> tuple[Criterion, ...]:
    """The criteria a grade judges: `--only`'s, judged from `--case`'s or `--scenario`'s runs alone if given, the
    public ones alone for `grader check`."""
    criteria = rubric.select(request.only)
    if request.cases:
        criteria = tuple(replace(c, cases=request.cases) if c.deliverable == "gateway" else c for c in criteria)
    if request.scenarios:
        criteria = tuple(replace(c, scenarios=request.scenarios) if c.deliverable == "loadgen" else c for c in criteria)
    if request.public_only:
        criteria = tuple(c for c in criteria if c.visibility == "public")
    return criteria


def _edition(request: GradeRequest, submission: Submission | None) -> Edition:
    """What the submission is graded against: the edition its stamp names (or `--edition`'s, given), and the
    contract it declares (the latest when it cannot be read: then nothing is judged)."""
    found = Edition.of(submission.data) if submission else Edition.of({})
    found = replace(found, name=request.edition) if request.edition else found
    try:
        check_name(found.name)
    except EditionError as exc:
        where = "--edition" if request.edition else f"{request.submission}/submission.yaml: edition.name"
        raise RubricError(f"{where}: {exc}") from None
    return found


def _fit(submission: Submission, edition: Edition) -> dict[str, Any]:
    """`{"fits": ...}` when the submission carries the numbers of an edition other than the one it is graded
    against: the default's, or its stamp's when `--edition` named another; else nothing."""
    stamped = Edition.of(submission.data).name
    try:
        inputs = memo_front_matter(submission.path("memo")).get("sizing_inputs")
    except (KeyError, TypeError, ValueError, OSError, ContractError):
        inputs = None
    fit = fitted_edition(
        submission.folder,
        issued=edition.name,
        known=(DEFAULT_EDITION, stamped),
        sizing_inputs=inputs if isinstance(inputs, dict) else None,
    )
    return {"fits": fit.to_dict()} if fit else {}


def _fresh_book(out: Path) -> RecordBook:
    """The grade's record book in `out/runs/`, emptied of an earlier grade's records."""
    folder = out / RUNS
    if folder.is_dir():
        for old in folder.glob("*.json.gz"):
            old.unlink()
    return RecordBook(folder)


def grade(request: GradeRequest) -> Grade:
    """Grade one submission; write its run records to `request.out/runs/` and its reports to `request.out`."""
    started_at = dt.datetime.now(dt.UTC).replace(microsecond=0)
    t0 = time.perf_counter()
    latest = load_rubric(request.rubric, override=request.override, checks=registered())
    report = progress(request.echo)
    book = _fresh_book(Path(request.out))
    with _submission_folder(request.submission) as (folder, refused):
        check = (
            check_submission(folder)
            if folder
            else ContractCheck(Path(request.submission), None, (Problem("*", refused, True),))
        )
        submission, problems = check.submission, check.by_part()
        edition = _edition(request, submission)
        latest = latest.for_edition(edition.name)
        unseen = unseen_material(request, latest)
        rubric = latest.for_contract(edition.contract)
        criteria = _selected(rubric, request)
        results: dict[str, CriterionResult] = {}
        carried: set[str] = set()  # criteria not judged (skipped, or the grader's own failure): a re-judge keeps them
        todo: dict[str, list[Criterion]] = {}
        for criterion in criteria:
            broken = check.skipping(SECTIONS[criterion.deliverable].part)
            if not criterion.in_brief:
                results[criterion.id] = not_in_brief(criterion, rubric.contract)
                carried.add(criterion.id)
                report(results[criterion.id])
            elif broken or submission is None:
                results[criterion.id] = skipped(criterion, "the contract is broken for this part: " + "; ".join(broken))
                carried.add(criterion.id)
                report(results[criterion.id])
            else:
                todo.setdefault(criterion.deliverable, []).append(criterion)
        ran = Ran()
        if todo and submission is not None:
            ran = SectionRunner(request, rubric, unseen, submission, book, report).run(todo)
            results.update(ran.results)
            carried |= ran.not_judged
    ordered = [results[c.id] for c in criteria]
    grade_ = Grade(
        submission=str(request.submission),
        candidate=(submission.data.get("candidate") if submission else None),
        seed=request.seed,
        started=started_at.isoformat(),
        duration_s=round(time.perf_counter() - t0, 3),
        sandboxed=ran.isolated,
        sandbox_note=ran.sandbox_note,
        rubric=str(rubric.path) + (" (public criteria only)" if request.public_only else unseen.missing),
        contract_problems=[p for lines in problems.values() for p in lines],
        criteria=ordered,
        human_checklist=list(HUMAN_CHECKLIST) if any(c.deliverable == "memo" for c in criteria) else [],
        inherent_s=round(ran.inherent_s, 3),
        section_s=ran.section_s,
        edition=(edition.to_dict() | _fit(submission, edition)) if submission else {},
    )
    book.write_index(_index(grade_, request, unseen, problems, carried))
    from grader.reports import write_reports

    write_reports(grade_, request.out)
    return grade_


def _index(
    grade_: Grade, request: GradeRequest, unseen: UnseenMaterial, problems: dict[str, list[str]], carried: set[str]
) -> dict[str, Any]:
    """What a re-judge needs besides the records: the grade's facts, and what was not judged (and why)."""
    return {
        "submission": grade_.submission,
        "candidate": grade_.candidate,
        "seed": grade_.seed,
        "started": grade_.started,
        "duration_s": grade_.duration_s,
        "sandboxed": grade_.sandboxed,
        "sandbox_note": grade_.sandbox_note,
        "rubric": grade_.rubric,
        "public_only": request.public_only,
        "contract_problems": problems,
        "criteria": [c.id for c in grade_.criteria],
        "durations": {c.id: c.duration_s for c in grade_.criteria},
        "not_judged": {
            c.id: {"status": c.status, "output": c.output, "logs": c.evidence.logs}
            for c in grade_.criteria
            if c.id in carried
        },
        "inherent_s": grade_.inherent_s,
        "section_s": grade_.section_s,
        **({"edition": grade_.edition} if grade_.edition else {}),
        "variants": unseen.variants.varied if unseen.variants is not None else NO_VARIANTS,
    }
