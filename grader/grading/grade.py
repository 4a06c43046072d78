"""`grader grade`: turn a submission into a grade and its reports, whatever the submission does.

The order: unpack (if an archive), read the rubric, check the contract part by part (a broken
part skips only the criteria that need it), then run the sections in a sandbox, and write the
reports. The only errors that stop a grade are the grader's own (a bad rubric, an unwritable
output folder); everything a submission does wrong ends up in the report.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import tempfile
import threading
import time
import traceback
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

from grader.contract import ContractError, Submission, read_yaml, schema_errors
from grader.criteria.memo import HUMAN_CHECKLIST
from grader.grading.outcome import CriterionResult, Grade
from grader.grading.rubric import Criterion, Rubric, load_rubric
from grader.grading.sections import (
    grade_gateway,
    grade_loadgen,
    grade_manifests,
    grade_memo,
    grade_sizing,
    grade_tests,
    skipped,
    unjudged,
)

__all__ = ["PARTS", "GradeRun", "contract_problems", "grade"]

# Which part of submission.yaml each deliverable needs.
PARTS = {"loadgen": "loadgen", "tests": "loadgen", "gateway": "gateway", "manifests": "manifests",
         "sizing": "sizing", "memo": "memo"}
_SECTIONS = ("loadgen", "tests", "gateway", "sizing", "manifests", "memo")
_UNBOXED = ("manifests", "memo")  # graded from the submission's files, no sandbox of their own
_UNTIMED = ("sizing", "manifests", "memo")  # no timing checks: graded beside the timed sections


@dataclass
class GradeRun:
    """What a grade was asked to do."""

    submission: Path
    out: Path
    only: tuple[str, ...] = ()
    seed: int = 0
    rubric: Path | None = None
    override: Path | None = None
    jobs: int = 1
    echo: Callable[[str], None] = print
    inherent_s: float = 0.0  # time the candidate's own commands ran (the part no grader can save)
    timings: dict[str, float] = field(default_factory=dict)
    public_only: bool = False  # `grader check`: only criteria the candidate may see, and the reports say so


def contract_problems(folder: Path) -> tuple[Submission | None, dict[str, list[str]]]:
    """submission.yaml, and its contract problems by part ("*" when the whole file is unusable)."""
    path = folder / "submission.yaml"
    if not path.is_file():
        return None, {"*": [f"{folder.name}: no submission.yaml at its top"]}
    try:
        data = read_yaml(path)
    except ContractError as exc:
        return None, {"*": [str(exc)]}
    if not isinstance(data, dict):
        return None, {"*": [f"{path.name}: must be a mapping of parts (see the contract)"]}
    problems: dict[str, list[str]] = {}
    for line in schema_errors("submission", data):
        head = line.split(":", 1)[0]
        part = head.split(".")[0].split("[")[0]
        if part in ("(top level)", "contract"):
            named = next((p for p in set(PARTS.values()) if f"'{p}'" in line), "*")
            part = named
        problems.setdefault(part, []).append(f"submission.yaml: {line}")
    submission = Submission(folder, data)
    for part in ("memo",):
        value = data.get(part)
        if isinstance(value, str) and not (folder / value).is_file():
            problems.setdefault(part, []).append(f"submission.yaml: memo: {value} does not exist")
    return submission, problems


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


def _progress(echo: Callable[[str], None]) -> Callable[[CriterionResult], None]:
    lock = threading.Lock()
    marks = {"passed": "PASS", "failed": "FAIL", "inconclusive": "INCONCLUSIVE", "skipped": "SKIP"}

    def report(result: CriterionResult) -> None:
        with lock:
            echo(f"{marks[result.status]:<12} {result.score:g}/{result.weight:g}  {result.id:<26} "
                 f"({result.duration_s:.1f} s{', rerun' if result.attempts > 1 else ''})")
    return report


def grade(run: GradeRun) -> Grade:
    """Grade one submission and write its reports to `run.out`."""
    started_at = dt.datetime.now(dt.UTC).replace(microsecond=0)
    t0 = time.perf_counter()
    rubric = load_rubric(run.rubric, override=run.override)
    criteria = rubric.select(run.only)
    if run.public_only:
        criteria = tuple(c for c in criteria if c.visibility == "public")
    report = _progress(run.echo)
    with _submission_folder(run.submission) as (folder, refused):
        submission, problems = contract_problems(folder) if folder else (None, {"*": [refused]})
        results: dict[str, CriterionResult] = {}
        todo: dict[str, list[Criterion]] = {}
        for criterion in criteria:
            broken = problems.get("*", []) + problems.get(PARTS[criterion.deliverable], [])
            if broken or submission is None:
                results[criterion.id] = skipped(criterion, "the contract is broken for this part: " + "; ".join(broken))
                report(results[criterion.id])
            elif criterion.deliverable not in _SECTIONS:
                results[criterion.id] = skipped(criterion, f"the {criterion.deliverable} section is not graded by this grader version")
                report(results[criterion.id])
            else:
                todo.setdefault(criterion.deliverable, []).append(criterion)
        sandboxed, note = True, ""
        if todo and submission is not None:
            sandboxed, note = _run_sections(run, rubric, submission, todo, results, report)
    ordered = [results[c.id] for c in criteria]
    grade_ = Grade(
        submission=str(run.submission), candidate=(submission.data.get("candidate") if submission else None),
        seed=run.seed, started=started_at.isoformat(), duration_s=round(time.perf_counter() - t0, 3),
        sandboxed=sandboxed, sandbox_note=note, rubric=str(rubric.path) + (" (public criteria only)" if run.public_only else ""),
        contract_problems=[p for lines in problems.values() for p in lines], criteria=ordered,
        human_checklist=list(HUMAN_CHECKLIST) if any(c.deliverable == "memo" for c in criteria) else [],
    )
    run.timings["total_s"] = grade_.duration_s
    run.timings["inherent_s"] = round(run.inherent_s, 3)
    from grader.reports import write_reports

    write_reports(grade_, run.out)
    return grade_


def _run_sections(run: GradeRun, rubric: Rubric, submission: Submission, todo: dict[str, list[Criterion]],
                  results: dict[str, CriterionResult], report: Callable[[CriterionResult], None]) -> tuple[bool, str]:
    from grader.sandbox import Sandbox

    notes: list[tuple[bool, str]] = []
    lock = threading.Lock()

    def record(result: CriterionResult) -> None:
        with lock:
            results[result.id] = result
        report(result)

    def section(name: str) -> None:
        try:
            if name in _UNBOXED:  # read from the submission's files; the memo opens a sandbox only to size
                _, inherent = (grade_manifests if name == "manifests" else grade_memo)(submission, todo[name],
                                                                                       report=record)
                with lock:
                    run.inherent_s += inherent
                return
            with Sandbox(submission.folder) as box:
                with lock:
                    notes.append((box.isolated, box.note))
                if name == "loadgen":
                    _, inherent = grade_loadgen(box, submission, rubric, todo[name], seed=run.seed, report=record)
                elif name == "gateway":
                    _, inherent = grade_gateway(box, submission, rubric, todo[name], seed=run.seed, report=record)
                elif name == "sizing":
                    _, inherent = grade_sizing(box, submission, todo[name], report=record)
                else:
                    _, inherent = grade_tests(box, submission, todo[name], report=record)
            with lock:
                run.inherent_s += inherent
        except Exception as exc:  # noqa: BLE001 - the grader's own failure: the rest of the grade goes on
            why = f"the grader could not finish the {name} section ({type(exc).__name__}: {exc}); a person should look"
            for criterion in todo[name]:
                if criterion.id not in results:
                    record(unjudged(criterion, why, logs=traceback.format_exc()))

    # Untimed sections (no timing checks) run beside the timed ones, whatever --jobs says.
    def untimed() -> None:
        for n in todo:
            if n in _UNTIMED:
                section(n)

    side = threading.Thread(target=untimed, daemon=True)
    side.start()
    names = [n for n in todo if n not in _UNTIMED]
    if run.jobs > 1 and len(names) > 1:
        with ThreadPoolExecutor(max_workers=min(run.jobs, len(names))) as pool:
            for future in [pool.submit(section, n) for n in names]:
                future.result()
    else:
        for name in names:
            section(name)
    side.join()
    isolated = all(i for i, _ in notes)
    note = next((n for i, n in notes if not i), notes[0][1] if notes else "")
    return isolated, note

