"""`grader replay`: one criterion's runs again, judged by the same check, with what made it fail side by side.

Every scenario is deterministic given its seed, so a failed criterion can be reproduced in one
command: the grade's own engine runs only the scenarios or gateway cases the criterion judges
(`--case` narrows a gateway criterion to one), in the sandbox, and judges the new runs with the same
function. Then, per request that made it fail, what the candidate recorded or the client got, what
the ledgers show, and a short timeline; and the commands that reproduce the run by hand (the fake
servers from settings files written beside the replay, the candidate's own command with its
flags; grading/by_hand.py). `--serve` starts those servers and keeps them up for a person with a
debugger.

Given a report folder, it replays every criterion that report failed, with the grade's seed.
"""

from __future__ import annotations

import json
import shlex
import tempfile
import time
from collections.abc import Callable
from contextlib import ExitStack
from dataclasses import dataclass, field, replace
from pathlib import Path

from grader.criteria.catalog import registered
from grader.grading.by_hand import (
    gateway_by_hand,
    loadgen_by_hand,
    other_by_hand,
    serve_gateway,
    serve_loadgen,
)
from grader.grading.sections import SECTIONS
from grader.grading.side_by_side import RUN, side_by_side
from grader.records.book import RecordBook
from grader.records.keys import RunKey
from grader.rubric import Criterion, Rubric, load_rubric
from grader.rubric.variants import is_variant_name
from grader.shared.contracts import Edition

__all__ = [
    "SPREAD",
    "ReplayError",
    "Replayed",
    "default_out",
    "failed_in_report",
    "failing_in",
    "failing_runs",
    "replay",
    "replay_target",
    "serve_scenario",
    "wait_for_interrupt",
]


#: Runs a replay makes at once, the longest first. A criterion judged from every run of its section (a load
#: generator's summary over 26 scenario runs, unseen variants included) is replayed in about 8 s instead of
#: 28; a run mostly waits on the fake server's token clock, so five share two cores. Four took 0.5 s longer
#: and six no less: past five, each further sandbox's start costs what it saves, the cores being full of
#: the candidate's own processes (bench/README.md).
SPREAD = 5


class ReplayError(ValueError):
    """Nothing to replay as asked; the message says what was wrong and what would work."""


@dataclass
class Replayed:
    criterion: Criterion
    status: str
    score: float
    output: str
    lines: list[str] = field(default_factory=list)  # the side by side
    by_hand: list[str] = field(default_factory=list)  # commands that reproduce the run without the grader
    seconds: float = 0.0
    failing: list[str] = field(default_factory=list)  # the requests (or cases) that made it fail


def _criterion(rubric: Rubric, criterion_id: str) -> Criterion:
    try:
        return rubric.criterion(criterion_id)
    except KeyError:
        ids = ", ".join(c.id for c in rubric.criteria)
        raise ReplayError(f"{criterion_id}: no such criterion in {rubric.path} (known: {ids})") from None


def _narrowed(criterion: Criterion, rubric: Rubric, names: tuple[str, ...]) -> tuple[str, ...]:
    """The scenarios (a load-generator criterion) or cases (a gateway one) to replay alone; () for all it judges."""
    if not names:
        return ()
    if criterion.deliverable == "gateway":
        known, what = criterion.cases or tuple(c.name for c in rubric.gateway.cases), "cases"
    elif criterion.deliverable == "loadgen":
        known, what = criterion.scenarios, "scenarios"
    else:
        raise ReplayError(
            f"{criterion.id} is judged from the {criterion.deliverable} section, not from scenarios or cases"
        )
    unknown = [name for name in names if name not in known]
    if unknown:
        raise ReplayError(f"{', '.join(unknown)}: {criterion.id} judges the {what} {', '.join(known)}")
    return names


def _option(criterion: Criterion, case: str | None, scenario: str | None) -> tuple[str, ...]:
    """--case or --scenario, checked against the criterion's section."""
    if case is not None and criterion.deliverable != "gateway":
        raise ReplayError(f"--case {case}: {criterion.id} is judged from load-generator scenarios, not gateway cases")
    if scenario is not None and criterion.deliverable != "loadgen":
        raise ReplayError(f"--scenario {scenario}: {criterion.id} is not judged from load-generator scenarios")
    return tuple(name for name in (case, scenario) if name is not None)


def is_variant(name: str) -> bool:
    """A request, case or record of an unseen variant's run: `baseline.v1#3`, `local-500 (variant 1)` (a case
    as the side by side labels it), `gateway.v1`."""
    return " (variant " in name or is_variant_name(name.split("#")[0])


def on_runs_of(book: RecordBook, names: list[str]) -> list[str]:
    """Those of a replay's failing requests (or cases, or record keys) from runs the graded `book` also made.

    A replay is a grade at its seed and draws the unseen variants; a grade made without them (the selftest
    grades most chaff on their public runs) is compared with it on the public runs alone."""
    drew = any(RunKey.parse(key).is_variant for key in book.records)
    return [name for name in names if drew or not is_variant(name)]


def failing_runs(book: RecordBook, rubric: Rubric, criterion_id: str) -> tuple[str, ...]:
    """The public scenarios (or gateway cases) whose runs, or whose unseen variants' runs, failed a criterion in
    a grade: what a replay from its report folder runs again, rather than every run the criterion judges."""
    _, failing = failing_in(book, rubric, criterion_id)
    names = tuple(dict.fromkeys(name.split("#")[0].split(" (variant")[0].partition(".v")[0] for name in failing))
    return () if RUN in names else names  # a whole gateway run failed it: every case, as from a submission


def failed_in_report(report_dir: Path) -> tuple[Path, int, list[str]]:
    """A grade's submission, seed and the criteria it failed (or could not decide), from its report folder."""
    from grader.reports import FILE_NAMES

    index_path, report_path = (
        report_dir / "runs" / "index.json",
        report_dir / FILE_NAMES["json"],
    )
    try:
        index = json.loads(index_path.read_text(encoding="utf-8"))
        report = json.loads(report_path.read_text(encoding="utf-8"))
        statuses = {t["extra_data"]["id"]: t["extra_data"]["status"] for t in report["tests"]}
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise ReplayError(
            f"{report_dir}: not a grade's report folder ({index_path.name} and {report_path.name} are read: {exc})"
        ) from None
    failed = [c for c, s in statuses.items() if s in ("failed", "inconclusive")]
    return Path(index["submission"]), int(index["seed"]), failed


def failing_in(book: RecordBook, rubric: Rubric, criterion_id: str) -> tuple[str, list[str]]:
    """A grade's status for a criterion, judged again from its records, and the requests (or cases) that failed
    it, read from every record of its section (public runs and unseen variants) as a replay reads its own."""
    from grader.grading.rejudge import grade_of

    criterion = _criterion(rubric, criterion_id)
    narrowed = RecordBook(None)
    narrowed.index = {**book.index, "criteria": [criterion.id]}
    narrowed.records = book.records
    (result,) = grade_of(narrowed, rubric).criteria
    return result.status, side_by_side(book, rubric, criterion, result)[1]


def replay(
    submission: Path,
    criterion_id: str,
    out: Path,
    *,
    seed: int = 0,
    case: str | None = None,
    scenario: str | None = None,
    runs: tuple[str, ...] = (),
    rubric: Path | None = None,
    sandboxes: int = SPREAD,
) -> Replayed:
    """Run and judge one criterion again, in the sandbox; its reports and records go to `out`. `case`,
    `scenario` or `runs` (scenarios or cases) narrow it to those of its runs; `sandboxes` of them are made
    at once, each in a sandbox of its own."""
    from grader.grading.grade import GradeRequest, grade

    loaded = load_rubric(rubric, checks=registered())
    criterion = _criterion(loaded, criterion_id)
    names = _narrowed(criterion, loaded, _option(criterion, case, scenario) or runs)
    cases = names if criterion.deliverable == "gateway" else ()
    scenarios = names if criterion.deliverable == "loadgen" else ()
    started = time.perf_counter()
    run = GradeRequest(
        submission,
        out,
        only=(criterion.id,),
        seed=seed,
        rubric=rubric,
        echo=lambda _: None,
        cases=cases,
        scenarios=scenarios,
        runs_at_once=sandboxes,
    )
    result = grade(run)
    (judged,) = [c for c in result.criteria if c.id == criterion.id]
    done = Replayed(
        criterion,
        judged.status,
        judged.score,
        judged.output,
        seconds=time.perf_counter() - started,
    )
    book = RecordBook.read(out / "runs") if (out / "runs" / "index.json").is_file() else RecordBook(None)
    section = SECTIONS[criterion.deliverable]
    records = {key: r for key, r in sorted(book.records.items()) if r["section"] == criterion.deliverable}
    folder = out / "by-hand"
    narrowed = replace(criterion, cases=cases or criterion.cases, scenarios=scenarios or criterion.scenarios)
    done.lines, done.failing = side_by_side(book, loaded, narrowed, judged)
    if criterion.deliverable == "loadgen":
        done.by_hand = loadgen_by_hand([section.load(r) for r in records.values()], submission, folder)
    elif criterion.deliverable == "gateway" and records:
        # the run of the first failing case: the public one, or a unseen variant's (named "case (variant N)")
        first = done.failing[0] if done.failing else ""
        name, _, variant = first.partition(" (variant ")
        key = str(RunKey("gateway", variant=int(variant.rstrip(")")) if variant else 0))
        run = section.load(records.get(key) or next(iter(records.values())))
        done.by_hand = gateway_by_hand(run, submission, folder, [name] if name in run.cases else [])
    else:
        done.by_hand = [f"cd {shlex.quote(str(submission))}"] + other_by_hand(criterion, list(records.values()))
    return done


def replay_target(
    target: Path,
    criterion: str | None,
    *,
    seed: int | None,
    case: str | None,
    scenario: str | None,
    serve: bool,
    out: Path | None,
    sandboxes: int,
    echo: Callable[[str], None],
    wait: Callable[[], None],
) -> bool:
    """`grader replay TARGET [CRITERION]`: a submission and a criterion, or a report folder (every criterion it
    failed, each on the runs that failed it there, with the grade's seed). Prints each verdict, its side by
    side and how to reproduce it; with `serve`, starts one criterion's servers instead. Whether every replayed
    criterion passed; ReplayError for a request that names nothing to replay. The replay's files go to `out`, by
    default outside the submission folder (`default_out`), which a candidate hands back."""
    book = None
    if (target / "runs" / "index.json").is_file():
        submission, graded_seed, failed = failed_in_report(target)
        book = RecordBook.read(target / "runs")
        seed = graded_seed if seed is None else seed
        ids = [criterion] if criterion else failed
        if not ids:
            echo(f"{target}: the grade failed no criterion; nothing to replay")
            return True
    else:
        if not criterion:
            raise ReplayError("name the CRITERION to replay (e.g. loadgen.ttft), or give a report folder")
        submission, ids = target, [criterion]
    seed = 0 if seed is None else seed
    out = default_out(submission) if out is None else out
    if serve:
        if len(ids) > 1:
            raise ReplayError(f"--serve starts one criterion's servers; name one of: {', '.join(ids)}")
        serve_scenario(submission, ids[0], seed=seed, case=case, scenario=scenario, echo=echo, wait=wait)
        return True
    passed = True
    rubric = load_rubric()
    for criterion_id in ids:
        # from a report, a criterion is replayed on the runs that failed it there (--case or --scenario win)
        runs = failing_runs(book, rubric, criterion_id) if book else ()
        done = replay(
            submission,
            criterion_id,
            out / criterion_id if len(ids) > 1 else out,
            seed=seed,
            case=case,
            scenario=scenario,
            runs=runs,
            sandboxes=sandboxes,
        )
        passed = passed and done.status == "passed"
        echo(
            f"{done.status.upper()} {done.score:g}/{done.criterion.weight:g}  {criterion_id}  "
            f"(seed {seed}, replayed in {done.seconds:.1f} s)"
        )
        echo(done.output)
        for line in done.lines:
            echo(line)
        echo("to reproduce by hand:")
        for line in done.by_hand:
            echo(f"  {line}")
        echo("")
    echo(f"the replay's reports, records and by-hand files: {out.resolve()}")
    return passed


def default_out(submission: Path) -> Path:
    """Where a replay writes when not told: the system's temporary folder, never the submission's own folder (a
    candidate's replay would otherwise leave its reports in the work they hand back)."""
    return Path(tempfile.gettempdir()) / f"grader-replay-{submission.resolve().name or 'submission'}"


# -- --serve: the scenario's servers, up until Ctrl-C -------------------------------------------------------


def serve_scenario(
    submission: Path,
    criterion_id: str,
    *,
    seed: int = 0,
    case: str | None = None,
    scenario: str | None = None,
    rubric: Path | None = None,
    echo: Callable[[str], None] = print,
    wait: Callable[[], None],
) -> None:
    """Start the servers of the criterion's (first) scenario or case on loopback, print how to run against them,
    call `wait` (it returns on Ctrl-C), then stop them."""
    loaded = load_rubric(rubric, checks=registered())
    criterion = _criterion(loaded, criterion_id)
    names = _narrowed(criterion, loaded, _option(criterion, case, scenario))
    from grader.contract import Submission, load_submission

    sub: Submission = load_submission(submission)
    loaded = loaded.for_edition(Edition.of(sub.data).name)  # the servers of the submission's own edition
    with ExitStack() as stack:
        if criterion.deliverable == "loadgen":
            name = (names or criterion.scenarios)[0]
            serve_loadgen(stack, name, loaded.scenarios[name], sub, submission, seed, echo)
        elif criterion.deliverable == "gateway":
            plan = loaded.gateway
            chosen = plan.case((names or criterion.cases or tuple(c.name for c in plan.cases))[0])
            if chosen.kind != "one" or chosen.stop_local:
                raise ReplayError(
                    f"case {chosen.name} needs the grader to drive it ({chosen.kind}); replay it without "
                    "--serve, or pick another with --case"
                )
            serve_gateway(stack, plan, chosen, sub, submission, seed, echo)
        else:
            raise ReplayError(
                f"{criterion.id}: --serve starts fake servers; the {criterion.deliverable} section has "
                "none (replay it without --serve)"
            )
        if len(criterion.runs_from) > 1 and not names:
            echo(
                f"(the first of {len(criterion.runs_from)}: {', '.join(criterion.runs_from)}; pick one with --case)"
                if criterion.deliverable == "gateway"
                else f"(the first of its scenarios: {', '.join(criterion.runs_from)})"
            )
        echo("ready: Ctrl-C stops the servers")
        wait()
    echo("stopped")


def wait_for_interrupt() -> None:
    """Block until Ctrl-C (SIGINT) or SIGTERM, then return so the servers are stopped cleanly."""
    import signal
    import threading

    stop = threading.Event()
    previous = {s: signal.signal(s, lambda *_: stop.set()) for s in (signal.SIGINT, signal.SIGTERM)}
    try:
        while not stop.wait(0.5):
            pass
    finally:
        for s, handler in previous.items():
            signal.signal(s, handler)
