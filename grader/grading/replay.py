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
import time
from collections.abc import Callable
from contextlib import ExitStack
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from grader.criteria.registry import Check, registered
from grader.grading.by_hand import (
    gateway_by_hand,
    loadgen_by_hand,
    other_by_hand,
    serve_gateway,
    serve_loadgen,
)
from grader.grading.outcome import CriterionResult
from grader.grading.records import RecordBook
from grader.grading.rubric import Criterion, Rubric, load_rubric
from grader.grading.sections import SECTIONS
from grader.runs.gateway import GatewayRun
from grader.runs.loadgen import LoadgenRun

__all__ = [
    "ReplayError",
    "Replayed",
    "failed_in_report",
    "failing_in",
    "failing_runs",
    "replay",
    "serve_scenario",
]

MAX_ROWS = 12
RUN = "the gateway run"  # what failed a gateway check of the whole run that names no case


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


def failing_runs(book: RecordBook, rubric: Rubric, criterion_id: str) -> tuple[str, ...]:
    """The public scenarios (or gateway cases) whose runs, or whose hidden variants' runs, failed a criterion in
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
    it, read from every record of its section (public runs and hidden variants) as a replay reads its own."""
    from grader.grading.rejudge import grade_of

    criterion = _criterion(rubric, criterion_id)
    narrowed = RecordBook(None)
    narrowed.index = {**book.index, "criteria": [criterion.id]}
    narrowed.records = book.records
    (result,) = grade_of(narrowed, rubric).criteria
    return result.status, _side_by_side(book, rubric, criterion, result)[1]


def _side_by_side(
    book: RecordBook, rubric: Rubric, criterion: Criterion, result: CriterionResult
) -> tuple[list[str], list[str]]:
    """The lines and the failing requests (or cases) of a criterion's records (public runs and hidden variants).
    A gateway run is shown when its own verdict failed: the public one judged again here, the variants' from
    the result."""
    from grader.grading.judging import judge

    section = SECTIONS[criterion.deliverable]
    records = [
        (key, r)
        for key, r in sorted(book.records.items())
        if r["section"] == criterion.deliverable
        and "@" not in key  # a rerun repeats its first run
        and (criterion.deliverable != "loadgen" or r["scenario"]["name"].split(".v")[0] in criterion.scenarios)
    ]
    unseen = result.unseen.output if result.unseen else ""
    if criterion.deliverable == "loadgen":
        return _loadgen_side_by_side(
            [section.load(r) for _, r in records],
            result.output + "\n" + unseen,
            criterion,
        )
    if criterion.deliverable != "gateway":
        return [], []
    lines: list[str] = []
    failing: list[str] = []
    for key, record in records:
        run = section.load(record)
        variant = key.partition(".v")[2]
        if variant:
            failed, output = (
                result.unseen is not None and result.unseen.status == "failed",
                unseen,
            )
        else:
            verdict = judge(criterion, section, [run], rubric)
            failed, output = (
                verdict is not None and not verdict.passed,
                verdict.output if verdict else "",
            )
        if failed:
            found = _gateway_side_by_side(run, output, label=f" (variant {variant})" if variant else "")
            lines += found[0]
            failing += found[1]
    return lines, failing


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
) -> Replayed:
    """Run and judge one criterion again, in the sandbox; its reports and records go to `out`. `case`,
    `scenario` or `runs` (scenarios or cases) narrow it to those of its runs."""
    from grader.grading.grade import GradeRun, grade

    loaded = load_rubric(rubric)
    criterion = _criterion(loaded, criterion_id)
    names = _narrowed(criterion, loaded, _option(criterion, case, scenario) or runs)
    cases = names if criterion.deliverable == "gateway" else ()
    scenarios = names if criterion.deliverable == "loadgen" else ()
    started = time.perf_counter()
    run = GradeRun(
        submission,
        out,
        only=(criterion.id,),
        seed=seed,
        rubric=rubric,
        echo=lambda _: None,
        cases=cases,
        scenarios=scenarios,
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
    narrowed = (
        replace(criterion, cases=cases) if cases else replace(criterion, scenarios=scenarios or criterion.scenarios)
    )
    done.lines, done.failing = _side_by_side(book, loaded, narrowed, judged)
    if criterion.deliverable == "loadgen":
        done.by_hand = loadgen_by_hand([section.load(r) for r in records.values()], submission, folder)
    elif criterion.deliverable == "gateway" and records:
        # the run of the first failing case: the public one, or a hidden variant's (named "case (variant N)")
        first = done.failing[0] if done.failing else ""
        name, _, variant = first.partition(" (variant ")
        key = f"gateway.v{variant.rstrip(')')}" if variant else "gateway"
        run = section.load(records.get(key) or next(iter(records.values())))
        done.by_hand = gateway_by_hand(run, submission, folder, [name] if name in run.cases else [])
    else:
        done.by_hand = [f"cd {shlex.quote(str(submission))}"] + other_by_hand(criterion, list(records.values()))
    return done


# -- the load generator: request by request ------------------------------------------------------------


def _fmt_ms(value: float | None) -> str:
    return "-" if value is None else f"{value * 1000:.0f}"


def _loadgen_side_by_side(runs: list[LoadgenRun], output: str, criterion: Criterion) -> tuple[list[str], list[str]]:
    check = registered()[criterion.id]
    if check.by_run:
        return _runs_side_by_side(runs, criterion, check)
    lines: list[str] = []
    failing: list[str] = []
    for run in runs:
        if run.stopped or run.results is None:
            lines.append(f"{run.scenario.name}: {run.problems[0] if run.problems else 'no results'}")
            continue
        t0 = min((t.arrival for t in run.truths), default=0.0)
        rows = []
        for pair in run.pairs:
            rep, tru = pair.reported or {}, pair.truth
            start, ttft = rep.get("start"), rep.get("ttft_s")
            yours_first = start + ttft if isinstance(start, int | float) and isinstance(ttft, int | float) else None
            wrong = _request_wrong(rep, tru, yours_first, criterion, output)
            label = f"{run.scenario.name}#{rep.get('index', tru.number if tru else '?')}"
            if wrong:
                failing.append(label)
            rows.append(
                (
                    bool(wrong),
                    [
                        label,
                        f"{rep.get('outcome', '-')}/{tru.outcome if tru else '-'}",
                        f"{rep.get('output_tokens', '-')}/{tru.tokens if tru else '-'}",
                        _fmt_ms(start - t0 if isinstance(start, int | float) else None),
                        _fmt_ms(tru.arrival - t0 if tru else None),
                        _fmt_ms(tru.first_content - t0 if tru and tru.first_content else None),
                        _fmt_ms(yours_first - t0 if yours_first is not None else None),
                        _fmt_ms(tru.end - t0 if tru else None),
                        "; ".join(wrong),
                    ],
                )
            )
        shown = [r for bad, r in rows if bad] or [r for _, r in rows]
        header = [
            "request",
            "outcome yours/ledger",
            "tokens yours/ledger",
            "sent",
            "seen by server",
            "first content sent",
            "first content yours",
            "end",
            "what differs",
        ]
        lines.append(f"scenario {run.scenario.name} (times in ms from the first request the server saw):")
        lines += _table(header, shown[:MAX_ROWS])
        if len(shown) > MAX_ROWS:
            lines.append(f"... {len(shown) - MAX_ROWS} more")
    return lines, failing


def _runs_side_by_side(runs: list[LoadgenRun], criterion: Criterion, check: Check) -> tuple[list[str], list[str]]:
    """A check of each run as a whole fails on runs, not requests: the scenarios that failed it, and why."""
    lines: list[str] = []
    failing: list[str] = []
    for run in runs:
        problems = [run.problems[0]] if run.stopped else check.run_problems(run, criterion) or []
        if problems:
            failing.append(run.scenario.name)
            reported = str(run.summary or "-")
            lines.append(
                f"scenario {run.scenario.name}: reported {reported[:160]}{'...' if len(reported) > 160 else ''}"
            )
            lines += [f"  {line}" for line in problems[:MAX_ROWS]]
    return lines, failing


def _request_wrong(
    rep: dict[str, Any],
    tru: Any,
    yours_first: float | None,
    criterion: Criterion,
    output: str,
) -> list[str]:
    if tru is None:
        return ["not in the ledger"]
    out = []
    if rep.get("outcome") != tru.outcome:
        out.append(f"outcome {rep.get('outcome')!r}, the ledger's {tru.outcome!r}")
    elif tru.outcome == "ok" and rep.get("output_tokens") != tru.tokens:
        out.append(f"{rep.get('output_tokens')!r} tokens, usage says {tru.tokens}")
    elif tru.outcome == "failed" and rep.get("failure") not in tru.reasons:
        out.append(f"failure {rep.get('failure')!r}, the ledger's fault is one of {sorted(tru.reasons)}")
    if tru.status != 200 and rep.get("status") != tru.status:
        out.append(f"status {rep.get('status')!r}, the server answered {tru.status}")
    if tru.first_content is not None and yours_first is not None and criterion.abs_s is not None:
        off = yours_first - tru.first_content
        if abs(off) > criterion.abs_s:
            out.append(f"first content {off * 1000:+.0f} ms from the ledger's")
    if not out and f"request {rep.get('index')}:" in output:
        out.append("named by the check")
    return out


# -- the gateway: case by case ---------------------------------------------------------------------------


def _gateway_side_by_side(run: GatewayRun, output: str, *, label: str = "") -> tuple[list[str], list[str]]:
    if not run.started:
        return [f"the gateway did not start{label}: {run.start_problem}"], []
    named = [name for name in run.cases if f"{name}:" in output or f"{name} " in output]
    failing = named or list(run.cases)
    header = [
        "case",
        "client got",
        "x-gateway-route",
        "local ledger",
        "API ledger",
        "sent",
        "local seen",
        "API seen",
        "first byte",
        "done",
    ]
    rows = []
    for name in failing[:MAX_ROWS]:
        case = run.cases[name]
        answer = case.answers[0] if case.answers else {}
        t0 = answer.get("sent_at", case.t0)
        headers = {k.lower(): v for k, v in (answer.get("headers") or {}).items()}
        events = answer.get("events") or []
        first = events[0][0] if events and isinstance(events[0], list) else answer.get("done_at")

        rows.append(
            [
                name,
                str(answer.get("status", "-")),
                headers.get("x-gateway-route", "-"),
                ",".join(str(r.get("status")) for r in case.local) or "-",
                ",".join(str(r.get("status")) for r in case.api) or "-",
                "0",
                _seen(case.local, t0),
                _seen(case.api, t0),
                _fmt_ms(first - t0 if isinstance(first, int | float) else None),
                _fmt_ms(answer["done_at"] - t0 if isinstance(answer.get("done_at"), int | float) else None),
            ]
        )
    lines = [
        f"cases{label} (times in ms from the client's send):",
        *_table(header, rows),
    ]
    for name in failing[:MAX_ROWS]:
        lines.append(f"{name}: {run.cases[name].case.what}")
    # a check of the run as a whole (its /stats) that names no case failed the run, not a case
    return lines, [name + label for name in named] or [f"{RUN}{label}"]


def _seen(records: list[dict[str, Any]], t0: float) -> str:
    """When each ledger record arrived, in ms after the client's send."""
    return ",".join(_fmt_ms(r["arrival"] - t0) for r in records) or "-"


def _table(header: list[str], rows: list[list[str]]) -> list[str]:
    widths = [max([len(h)] + [len(r[i]) for r in rows]) for i, h in enumerate(header)]
    return ["  ".join(cell.ljust(widths[i]) for i, cell in enumerate(row)).rstrip() for row in [header, *rows]]


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
    loaded = load_rubric(rubric)
    criterion = _criterion(loaded, criterion_id)
    cases = _narrowed(criterion, loaded, _option(criterion, case, scenario))
    from grader.contract import Submission, load_submission

    sub: Submission = load_submission(submission)
    with ExitStack() as stack:
        if criterion.deliverable == "loadgen":
            name = (cases or criterion.scenarios)[0]
            serve_loadgen(stack, name, loaded.scenarios[name], sub, submission, seed, echo)
        elif criterion.deliverable == "gateway":
            plan = loaded.gateway
            names = cases or criterion.cases or tuple(c.name for c in plan.cases)
            chosen = plan.case(names[0])
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
        if len(criterion.runs_from) > 1 and not cases:
            echo(
                f"(the first of {len(criterion.runs_from)}: {', '.join(criterion.runs_from)}; pick one with --case)"
                if criterion.deliverable == "gateway"
                else f"(the first of its scenarios: {', '.join(criterion.runs_from)})"
            )
        echo("ready: Ctrl-C stops the servers")
        wait()
    echo("stopped")
