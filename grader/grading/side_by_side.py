"""What made a criterion fail, beside the ledgers: the requests, runs or cases a replay shows.

A check of request by request names the requests (`baseline#3`), with what the candidate recorded
or the client got, what the ledgers show, and a short timeline; a check of each run as a whole (its
summary, its peak, its exit) names the runs; a gateway check names the cases its output names, or
the run when it judged the run whole (`/stats`). grading/replay.py prints these; a grade's records
give the same for the grade it was (`failing_in`).
"""

from __future__ import annotations

from typing import Any

from grader.criteria.catalog import registered
from grader.criteria.loadgen.observed import Observed
from grader.criteria.registry import Check
from grader.grading.sections import SECTIONS
from grader.outcome import CriterionResult
from grader.records.book import RecordBook
from grader.records.gateway import GatewayRun
from grader.records.keys import RunKey
from grader.rubric import Criterion, Rubric

__all__ = ["MAX_ROWS", "RUN", "side_by_side"]

MAX_ROWS = 12
RUN = "the gateway run"  # what failed a gateway check of the whole run that names no case


def side_by_side(
    book: RecordBook, rubric: Rubric, criterion: Criterion, result: CriterionResult
) -> tuple[list[str], list[str]]:
    """The lines and the failing requests (or cases) of a criterion's records (public runs and unseen variants).
    A gateway run is shown when its own verdict failed: the public one judged again here, the variants' from
    the result."""
    from grader.grading.judging import judge

    section = SECTIONS[criterion.deliverable]
    records = [
        (key, r)
        for key, r in sorted(book.records.items())
        if r["section"] == criterion.deliverable
        and not RunKey.parse(key).is_rerun  # a rerun repeats its first run
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
        variant = RunKey.parse(key).variant
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


# -- the load generator: request by request ------------------------------------------------------------


def _fmt_ms(value: float | None) -> str:
    return "-" if value is None else f"{value * 1000:.0f}"


def _loadgen_side_by_side(runs: list[Observed], output: str, criterion: Criterion) -> tuple[list[str], list[str]]:
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


def _runs_side_by_side(runs: list[Observed], criterion: Criterion, check: Check) -> tuple[list[str], list[str]]:
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
