"""`grader grade`: turn a submission into a grade and its reports, whatever the submission does.

The order: unpack (if an archive), read the rubric, check the contract part by part (a broken
part skips only the criteria that need it), then run the sections in a sandbox, keeping a record
of every run in `runs/`, judge each criterion from those records, and write the reports. The only
errors that stop a grade are the grader's own (a bad rubric, an unwritable output folder);
everything a submission does wrong ends up in the report.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import secrets
import tempfile
import threading
import time
import traceback
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from grader.contract import ContractError, Submission, memo_front_matter, schema_errors
from grader.criteria.catalog import registered
from grader.criteria.memo import HUMAN_CHECKLIST
from grader.grading.edition_fit import fitted_edition
from grader.grading.judging import FactsAt, VariantsAt, decide, not_in_brief, result_of, skipped, unjudged
from grader.grading.live_runs import LiveRuns
from grader.grading.sections import NO_VARIANTS, SECTIONS, Context, Section
from grader.grading.slots import Slots
from grader.outcome import NEAR_MISS, CriterionResult, Grade
from grader.records.book import RecordBook
from grader.rubric import Criterion, Rubric, RubricError, load_rubric
from grader.rubric.editions import EditionError, check_name
from grader.rubric.sizing_plan import SizingPlan
from grader.rubric.variants import Variants, VariantsError, load_variants
from grader.shared.contracts import DEFAULT_EDITION, Edition
from grader.shared.yaml_files import YamlError, read_yaml

__all__ = [
    "RUNS",
    "GradeRequest",
    "Unseen",
    "contract_problems",
    "draw_seed",
    "grade",
    "progress",
    "unseen_material",
]

RUNS = "runs"
#: The timed sections in the order they ask for a sandbox. The gateway's cases run one after another, each
#: waiting out the contract's timeouts, whatever the submission; a candidate's tests run their suite several
#: times; the load generator's many short runs come last, so that they can spread over the sandboxes the
#: others leave free (grading/slots.py).
_LONGEST_FIRST = ("gateway", "tests", "loadgen")


@dataclass(frozen=True)
class GradeRequest:
    """What a grade is asked to do; `grade` answers it with a `Grade` (grader/outcome.py)."""

    submission: Path
    out: Path
    only: tuple[str, ...] = ()
    seed: int = 0
    rubric: Path | None = None
    override: Path | None = None
    sandboxes: int = 1  # timed sections graded at once, each in a sandbox of its own
    echo: Callable[[str], None] = print
    public_only: bool = False  # `grader check`: only criteria the candidate may see, and the reports say so
    cases: tuple[str, ...] = ()  # `grader replay --case`: the gateway criteria judge these cases alone
    scenarios: tuple[str, ...] = ()  # `grader replay --scenario`: the load-generator criteria judge these alone
    with_variants: bool = True  # run the unseen variants when the kit has them (bench/grade_time.py compares)
    runs_at_once: int = 1  # `grader replay`: a criterion's runs made this many at once, each in a sandbox of its own
    edition: str = ""  # the edition to grade against, whatever the submission's stamp says ("": the stamp's)


@dataclass(frozen=True)
class Unseen:
    """The unseen material a grade runs besides the public: the sizing input sets (the rubric's and the unseen
    ones) and the variants of the scenarios and cases (None: none)."""

    sizing: SizingPlan
    variants: Variants | None
    missing: str  # what the reports should say is missing from this kit ("" when nothing is)


def unseen_material(request: GradeRequest, rubric: Rubric) -> Unseen:
    """The unseen material `request` runs: none for `grader check`, none in a candidate's kit."""
    if request.public_only:
        return Unseen(rubric.sizing, None, "")
    try:
        sizing = rubric.sizing.with_hidden()
        variants = load_variants(rubric) if request.with_variants else None
    except (ValueError, VariantsError) as exc:
        raise RubricError(str(exc)) from None
    if not sizing.unseen and variants is None:
        return Unseen(sizing, variants, " (no unseen material in this kit: public input sets and scenarios only)")
    return Unseen(sizing, variants, "")


def draw_seed() -> int:
    """A fresh seed for a grade or a round: the unseen variants' draws of one round say nothing of the next's."""
    return secrets.randbelow(2**31)


def contract_problems(folder: Path) -> tuple[Submission | None, dict[str, list[str]]]:
    """submission.yaml, and its contract problems by part ("*" when the whole file is unusable)."""
    path = folder / "submission.yaml"
    if not path.is_file():
        return None, {"*": [f"{folder.name}: no submission.yaml at its top"]}
    try:
        data = read_yaml(path)
    except YamlError as exc:
        return None, {"*": [str(exc)]}
    if not isinstance(data, dict):
        return None, {"*": [f"{path.name}: must be a mapping of parts (see the contract)"]}
    parts = {s.part for s in SECTIONS.values()}
    problems: dict[str, list[str]] = {}
    for line in schema_errors("submission", data):
        head = line.split(":", 1)[0]
        part = head.split(".")[0].split("[")[0]
        if part in ("(top level)", "contract"):
            part = next((p for p in parts if f"'{p}'" in line), "*")
        problems.setdefault(part, []).append(f"submission.yaml: {line}")
    submission = Submission(folder, data)
    value = data.get("memo")
    if isinstance(value, str) and not (folder / value).is_file():
        problems.setdefault("memo", []).append(f"submission.yaml: memo: {value} does not exist")
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


def progress(echo: Callable[[str], None]) -> Callable[[CriterionResult], None]:
    """One line per criterion as soon as it is judged; under it, why it was judged twice and how close a timing
    check came (its closest call, with the limit), for a near miss that passed too: a candidate should see it."""
    lock = threading.Lock()
    marks = {"passed": "PASS", "failed": "FAIL", "inconclusive": "INCONCLUSIVE", "skipped": "SKIP"}

    def report(result: CriterionResult) -> None:
        rerun = ", rerun" if result.attempts > 1 else ""
        head = f"{marks[result.status]:<12} {result.score:g}/{result.weight:g}  {result.id:<26} "
        lines = [f"{head}({result.duration_s:.1f} s{rerun})"]
        if result.rerun:
            lines.append(f"{'':<12} rerun: {result.rerun}")
        if result.closest and result.margin is not None and result.margin >= NEAR_MISS:  # passed or not
            lines.append(f"{'':<12} closest call (margin {result.margin:.2f}): {result.closest}")
        with lock:
            for line in lines:
                echo(line)

    return report


def _selected(rubric: Rubric, run: GradeRequest) -> tuple[Criterion, ...]:
    """The criteria a grade judges: `--only`'s, judged from `--case`'s or `--scenario`'s runs alone if given, the
    public ones alone for `grader check`."""
    criteria = rubric.select(run.only)
    if run.cases:
        criteria = tuple(replace(c, cases=run.cases) if c.deliverable == "gateway" else c for c in criteria)
    if run.scenarios:
        criteria = tuple(replace(c, scenarios=run.scenarios) if c.deliverable == "loadgen" else c for c in criteria)
    if run.public_only:
        criteria = tuple(c for c in criteria if c.visibility == "public")
    return criteria


def _edition(run: GradeRequest, submission: Submission | None) -> Edition:
    """What the submission is graded against: the edition its stamp names (or `--edition`'s, given), and the
    contract it declares (the latest when it cannot be read: then nothing is judged)."""
    found = Edition.of(submission.data) if submission else Edition.of({})
    found = replace(found, name=run.edition) if run.edition else found
    try:
        check_name(found.name)
    except EditionError as exc:
        where = "--edition" if run.edition else f"{run.submission}/submission.yaml: edition.name"
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


def grade(run: GradeRequest) -> Grade:
    """Grade one submission; write its run records to `run.out/runs/` and its reports to `run.out`."""
    started_at = dt.datetime.now(dt.UTC).replace(microsecond=0)
    t0 = time.perf_counter()
    latest = load_rubric(run.rubric, override=run.override, checks=registered())
    report = progress(run.echo)
    book = _fresh_book(Path(run.out))
    with _submission_folder(run.submission) as (folder, refused):
        submission, problems = contract_problems(folder) if folder else (None, {"*": [refused]})
        edition = _edition(run, submission)
        latest = latest.for_edition(edition.name)
        unseen = unseen_material(run, latest)
        rubric = latest.for_contract(edition.contract)
        criteria = _selected(rubric, run)
        results: dict[str, CriterionResult] = {}
        carried: set[str] = set()  # criteria not judged (skipped, or the grader's own failure): a re-judge keeps them
        todo: dict[str, list[Criterion]] = {}
        for criterion in criteria:
            section = SECTIONS[criterion.deliverable]
            broken = problems.get("*", []) + problems.get(section.part, [])
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
        sandboxed, note, inherent = True, "", 0.0
        section_s: dict[str, float] = {}
        if todo and submission is not None:
            sandboxed, note, inherent, section_s = _run_sections(
                run, rubric, unseen, submission, todo, book, results, carried, report
            )
    ordered = [results[c.id] for c in criteria]
    grade_ = Grade(
        submission=str(run.submission),
        candidate=(submission.data.get("candidate") if submission else None),
        seed=run.seed,
        started=started_at.isoformat(),
        duration_s=round(time.perf_counter() - t0, 3),
        sandboxed=sandboxed,
        sandbox_note=note,
        rubric=str(rubric.path) + (" (public criteria only)" if run.public_only else unseen.missing),
        contract_problems=[p for lines in problems.values() for p in lines],
        criteria=ordered,
        human_checklist=list(HUMAN_CHECKLIST) if any(c.deliverable == "memo" for c in criteria) else [],
        inherent_s=round(inherent, 3),
        section_s=section_s,
        edition=(edition.to_dict() | _fit(submission, edition)) if submission else {},
    )
    book.write_index(_index(grade_, run, unseen, problems, carried))
    from grader.reports import write_reports

    write_reports(grade_, run.out)
    return grade_


def _index(
    grade_: Grade, run: GradeRequest, unseen: Unseen, problems: dict[str, list[str]], carried: set[str]
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
        "public_only": run.public_only,
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


def _runs_s(section: Section, criterion: Criterion, facts_at: FactsAt, variants_at: VariantsAt, attempts: int) -> float:
    """How long the runs a criterion was judged from took: its public runs and its unseen variants', at every
    attempt it made (all of them already made and loaded: this runs nothing)."""
    total = 0.0
    for attempt in range(1, attempts + 1):
        objects = facts_at(attempt)
        if objects is not None:
            total += section.own_s(objects, criterion)
        found = variants_at(attempt)
        if found is not None:
            total += section.own_s(found[1], found[0])
    return total


def _run_sections(
    run: GradeRequest,
    rubric: Rubric,
    unseen: Unseen,
    submission: Submission,
    todo: dict[str, list[Criterion]],
    book: RecordBook,
    results: dict[str, CriterionResult],
    carried: set[str],
    report: Callable[[CriterionResult], None],
) -> tuple[bool, str, float, dict[str, float]]:
    """Run each section and judge its criteria; whether every sandbox isolated, the sandbox line, how long
    the candidate's own commands ran (the part no grader can save) and how long each section's shared runs
    took."""
    from grader.sandbox import Sandbox, SandboxRefused

    notes: list[tuple[bool, str]] = []
    lock = threading.Lock()
    inherent = 0.0
    section_s: dict[str, float] = {}

    def record(result: CriterionResult, *, judged: bool = True) -> None:
        with lock:
            results[result.id] = result
            if not judged:
                carried.add(result.id)
        report(result)

    def section_of(name: str) -> None:
        nonlocal inherent
        section = SECTIONS[name]
        ctx = Context(
            submission,
            rubric,
            run.seed,
            todo[name],
            sizing=unseen.sizing,
            variants=unseen.variants,
            open_box=lambda: Sandbox(submission.folder),
            spread=run.runs_at_once,
        )
        varied = unseen.variants.varied if unseen.variants is not None else NO_VARIANTS
        try:
            with Sandbox(submission.folder) if section.boxed else contextlib.nullcontext() as box:
                if box is not None:
                    with lock:
                        notes.append((box.isolated, box.note))
                ctx.box = box
                # a grade's timed section spreads its first runs over the sandboxes free (a replay spreads its
                # own); with one sandbox none is ever free, and each run is made on first need, as it is printed
                lend = slots if section.timed and run.runs_at_once == 1 and run.sandboxes > 1 else None
                live = LiveRuns(section, ctx, book, varied, slots=lend)
                live.make_first_runs(todo[name])
                for criterion in todo[name]:
                    started, shared = time.perf_counter(), live.shared_s
                    facts_at, variants_at = live.facts_at(criterion), live.variants_at(criterion)
                    decision = decide(criterion, section, rubric, facts_at, variants_at)
                    # its own time: the runs it read (each counted for every criterion that read it), judging it,
                    # and its reruns' judging; the section's shared time is reported once, below
                    took = time.perf_counter() - started - (live.shared_s - shared)
                    if decision is not None:
                        took += _runs_s(section, criterion, facts_at, variants_at, decision.attempts)
                    if decision is None:
                        record(
                            unjudged(
                                criterion, f"the grader made no run that covers {criterion.id}; a person should look"
                            ),
                            judged=False,
                        )
                    else:
                        record(result_of(criterion, decision, duration_s=took))
            with lock:
                inherent += live.inherent
                section_s[name] = round(live.shared_s, 3)
            if live.shared_s:
                run.echo(f"{'':<12} the {name} section's runs: {live.shared_s:.1f} s, shared by its criteria")
        except SandboxRefused as exc:  # nothing of the candidate's ran: one line says why and what to change
            with lock:
                notes.append((False, f"NOT GRADED: {exc}"))
            for criterion in todo[name]:
                if criterion.id not in results:
                    record(unjudged(criterion, f"the {name} section was not graded: {exc}"), judged=False)
        except Exception as exc:  # noqa: BLE001 - the grader's own failure: the rest of the grade goes on
            why = f"the grader could not finish the {name} section ({type(exc).__name__}: {exc}); a person should look"
            for criterion in todo[name]:
                if criterion.id not in results:
                    record(unjudged(criterion, why, logs=traceback.format_exc()), judged=False)

    # Untimed sections (no timing checks) run beside the timed ones, whatever --sandboxes says.
    def untimed() -> None:
        for n in todo:
            if not SECTIONS[n].timed:
                section_of(n)

    def timed(name: str, ticket: int) -> None:
        with slots.held(ticket):
            section_of(name)

    slots = Slots(run.sandboxes)
    side = threading.Thread(target=untimed, daemon=True)
    side.start()
    names = sorted(
        (n for n in todo if SECTIONS[n].timed),
        key=lambda n: (n not in _LONGEST_FIRST, _LONGEST_FIRST.index(n) if n in _LONGEST_FIRST else 0),
    )
    with ThreadPoolExecutor(max_workers=max(1, len(names))) as pool:
        for future in [pool.submit(timed, n, slots.ask()) for n in names]:
            future.result()
    side.join()
    isolated = all(i for i, _ in notes)
    note = next((n for i, n in notes if not i), notes[0][1] if notes else "")
    return isolated, note, inherent, section_s
