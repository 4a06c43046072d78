"""Reading the gateway's answers and the ledgers' records, and the timeline every gateway
criterion shows as its evidence: the request, each ledger record (route, time after the request
was sent, status, how it ended) and the client's answer."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable
from typing import Any

from grader.criteria.busy import busy_from_cpu, busy_from_ledgers
from grader.criteria.registry import check
from grader.criteria.verdict import Verdict
from grader.outcome import Evidence
from grader.records.gateway import CaseRun, GatewayRun
from grader.rubric import Criterion
from grader.rubric.gateway_plan import GatewayPlan

__all__ = [
    "COLUMNS",
    "answer_content",
    "answer_events",
    "answer_header",
    "answer_route",
    "case_check",
    "case_evidence",
    "case_timeline",
    "has_error_body",
    "is_complete",
    "is_stream",
    "judge_cases",
    "parse_json",
    "record_how",
    "record_whole",
    "statuses_of",
    "success_records",
    "too_busy",
]

COLUMNS = ["case", "at (s)", "who", "what"]


def parse_json(text: Any) -> Any:
    try:
        return json.loads(text)
    except (TypeError, ValueError):
        return None


def answer_events(answer: dict[str, Any]) -> list[tuple[float, str]]:
    return [(float(t), str(d)) for t, d in answer.get("events") or []]


def is_stream(run: CaseRun, i: int = 0) -> bool:
    return bool(run.sent and run.sent[min(i, len(run.sent) - 1)].get("stream"))


def is_complete(run: CaseRun, answer: dict[str, Any], i: int = 0) -> bool:
    """A whole successful answer: 200, and for a stream its last event is [DONE]."""
    if answer.get("status") != 200:
        return False
    if is_stream(run, i):
        events = answer_events(answer)
        return bool(events) and events[-1][1].strip() == "[DONE]"
    body = parse_json(answer.get("body"))
    return isinstance(body, dict) and "choices" in body


def has_error_body(answer: dict[str, Any]) -> bool:
    body = parse_json(answer.get("body"))
    return isinstance(body, dict) and "error" in body


def answer_content(answer: dict[str, Any]) -> tuple[str, float | None]:
    """The streamed content text and the arrival time of its first non-empty piece."""
    text, first = "", None
    for t, data in answer_events(answer):
        chunk = parse_json(data)
        if not isinstance(chunk, dict):
            continue
        for choice in chunk.get("choices") or []:
            piece = (choice.get("delta") or {}).get("content") if isinstance(choice, dict) else None
            if isinstance(piece, str) and piece:
                text += piece
                first = t if first is None else first
    return text, first


def answer_header(answer: dict[str, Any], name: str) -> str | None:
    headers = {str(k).lower(): v for k, v in (answer.get("headers") or {}).items()}
    return headers.get(name)


def answer_route(run: CaseRun, answer: dict[str, Any]) -> str:
    """The route whose ledger shows the answer the client got: `none` for the gateway's own error."""
    status = answer.get("status")
    if status == 200:
        return "api" if run.api else "local"
    for route, records in (("api", run.api), ("local", run.local)):
        if 400 <= (status or 0) < 500 and any(r.get("status") == status for r in records):
            return route
    return "none"


def record_whole(record: dict[str, Any]) -> bool:
    """The server sent a whole answer: 200, and no fault that ended or broke the stream."""
    fault = (record.get("fault") or {}).get("kind")
    return (
        record.get("status") == 200
        and fault not in ("cut", "no_done", "stream_error", "malformed_chunk")
        and record.get("finish_reason") not in ("abort", "error")
    )


def success_records(run: CaseRun) -> dict[str, list[dict[str, Any]]]:
    """Per route, the ledger records of attempts that gave the client a whole successful answer."""
    out: dict[str, list[dict[str, Any]]] = {"local": [], "api": []}
    if run.case.kind in BURSTS:  # many requests, all meant for the local route
        ok = sum(is_complete(run, a, i) for i, a in enumerate(run.answers))
        out["local"] = [r for r in run.local if r.get("status") == 200][:ok]
    else:
        for i, answer in enumerate(run.answers):
            if is_complete(run, answer, i):
                route = answer_route(run, answer)
                records = [r for r in (run.api if route == "api" else run.local) if record_whole(r)]
                if records:
                    out[route].append(records[min(len(out[route]), len(records) - 1)])
    for route in ("local", "api"):
        out[route] += [r for r in run.extra.get(f"warm_{route}", []) if r.get("status") == 200]
    return out


def record_how(record: dict[str, Any]) -> str:
    fault = (record.get("fault") or {}).get("kind")
    chunks = sum(1 for c in record.get("chunks") or [] if c[1] == "content")
    return (
        f"HTTP {record.get('status')}"
        + (f", fault {fault}" if fault else "")
        + (f", ended {record['finish_reason']}" if record.get("finish_reason") else "")
        + (f", {chunks} content chunks" if chunks else "")
    )


def case_timeline(run: CaseRun, *, limit: int = 12) -> list[list[Any]]:
    rows: list[list[Any]] = []
    for i, body in enumerate(run.sent[:limit]):
        answer = run.answers[i] if i < len(run.answers) else {}
        sent_at = answer.get("sent_at", run.t0)
        what = f"POST /v1/chat/completions stream={bool(body.get('stream'))} max_tokens={body.get('max_tokens')}" + (
            f" require={json.dumps(body['require'])}" if "require" in body else ""
        )
        rows.append([run.case.name, round(sent_at - run.t0, 3), "client -> gateway", what])
    for route, records in (("local", run.local), ("api", run.api)):
        for record in records[:limit]:
            rows.append(
                [
                    run.case.name,
                    round(float(record.get("arrival", run.t0)) - run.t0, 3),
                    f"{route} ledger",
                    record_how(record),
                ]
            )
    if run.local_stopped:
        rows.append([run.case.name, 0.0, "local ledger", "server stopped: connections refused"])
    for i, answer in enumerate(run.answers[:limit]):
        events = answer_events(answer)
        tail = events[-1][1][:70] if events else (answer.get("body") or "")[:70]
        at = answer["done_at"] - run.t0 if "done_at" in answer else None
        rows.append(
            [
                run.case.name,
                round(at, 3) if at is not None else "",
                "gateway -> client",
                f"HTTP {answer.get('status')} route={answer_header(answer, 'x-gateway-route')} "
                f"attempts={answer_header(answer, 'x-gateway-attempts')!r}"
                + (f" {len(events)} events" if events else "")
                + f"; ends {tail!r}"
                + (f"; transport: {answer['error']}" if answer.get("error") else ""),
            ]
        )
    rows[len(run.sent[:limit]) :] = sorted(rows[len(run.sent[:limit]) :], key=lambda r: r[1] if r[1] != "" else 1e9)
    return rows


def case_evidence(gw: GatewayRun, runs: Iterable[CaseRun], reported: str = "", truth: str = "") -> Evidence:
    runs = list(runs)
    sent = " ".join(f"`{r.case.name}`: {r.case.what}." for r in runs)
    rows = [row for r in runs for row in case_timeline(r)]
    return Evidence(sent=sent, reported=reported, truth=truth, columns=list(COLUMNS), rows=rows, logs=gw.logs)


def judge_cases(
    gw: GatewayRun,
    names: tuple[str, ...],
    per_case: Callable[[CaseRun], list[str]],
    *,
    reported: str = "",
    truth: str = "",
    evidence: tuple[Callable[[CaseRun], bool], str] | None = None,
    clear: Callable[[CaseRun], bool] = lambda run: False,
) -> Verdict:
    """Run `per_case` over the named cases; pass when none has a problem. `evidence`: (a test, what it looks
    for) when a rule could hold for want of anything to judge: no case passing the test is a failure. A case's
    problems found on a busy machine are rerun, unless `clear` says they are far past what noise could make (a
    behaviour judged over many samples)."""
    if not gw.started:
        return Verdict(False, f"the gateway did not start: {gw.start_problem}", evidence=case_evidence(gw, []))
    runs = [gw.cases[n] for n in names if n in gw.cases]
    missing = [n for n in names if n not in gw.cases]
    problems = [f"{n}: not run" for n in missing]
    unsure: list[str] = []  # problems found where the machine was too busy to tell
    doubtful: list[str] = []  # right answers to a case whose premise was never seen to hold
    reasons: list[str] = []
    for run in runs:
        if run.problem:
            problems.append(f"{run.case.name}: {run.problem}")
            continue
        if hang := unanswered(run):
            problems.append(f"{run.case.name}: {hang}")
            continue
        found = [f"{run.case.name}: {p}" for p in per_case(run)]
        why = busy_reason(run, gw.plan)
        if found and why and not clear(run):
            unsure.extend(found)
            reasons.append(why)
        elif found:
            problems.extend(found)
        elif run.extra.get("unseen"):
            doubtful.append(run.case.name)
            reasons.append(f"{run.case.name}: {run.extra['unseen']}")
    if evidence is not None and not any(evidence[0](run) for run in runs if not run.problem):
        problems.append(f"nothing to judge: no case shows {evidence[1]}")
    ok = not problems and not unsure
    output = (
        f"all {len(runs)} cases right"
        if ok
        else f"{len(problems + unsure)} problem(s):\n- " + "\n- ".join((problems + unsure)[:12])
    )
    doubt = bool(unsure or doubtful) and not problems
    if doubt:
        output += "".join(f"\n({why})" for why in dict.fromkeys(reasons))
    # Only where the machine was too busy to tell: borderline, so the cases run again.
    return Verdict(
        ok,
        output,
        margin=1.0 if doubt else None,
        busy=reasons[0] if doubt else None,
        evidence=case_evidence(gw, runs, reported, truth),
    )


BUSY = (
    "(the gateway fell back where no fault was set: a local first byte took longer than first_byte_s "
    "on a machine too busy to tell right from wrong)"
)


#: The kinds of case that send many requests at once, all meant for the local route.
BURSTS = ("concurrent", "many")


def too_busy(run: CaseRun) -> bool:
    """A case with no fault in which the gateway still went to the API: on this machine a local first
    byte took longer than first_byte_s, so the case cannot tell a right gateway from a wrong one."""
    return run.case.kind in BURSTS and bool(run.api)


def unanswered(run: CaseRun) -> str | None:
    """Why the case shows a gateway that hung: a request it never answered (the grader stopped waiting), with
    what the ledgers show of it; None when every request was answered."""
    for answer in run.answers:
        if answer.get("status") is None and "timed out" in str(answer.get("error") or "").lower():
            waited = float(answer.get("done_at", 0.0)) - float(answer.get("sent_at", 0.0))
            return (
                f"the gateway hung: no answer after {waited:.1f} s (the grader stops waiting there); the local "
                f"ledger shows {len(run.local)} request(s) (HTTP {statuses_of(run.local)}), the API ledger "
                f"{len(run.api)} (HTTP {statuses_of(run.api)})"
            )
    return None


def busy_reason(run: CaseRun, plan: GatewayPlan) -> str | None:
    """Why this case ran on a machine too busy to tell a right gateway from a wrong one, if it did:
    a fallback where no fault was set, a premise the grader waited for and never saw (the probe
    asking /health), a request that reached the local server `first_byte_s` or more after the grader
    sent it (no fault delays an arrival: the machine did), fake servers whose own steps ran the plan's
    `busy_lag_s` late, or a case for more than its `cpu_waiting` of whose time some task waited for a core."""
    if too_busy(run):
        return BUSY.strip("()")
    unseen = run.extra.get("unseen")
    if unseen:
        return str(unseen)
    if late := late_arrival(run, plan.first_byte_s):
        return late
    lagged = busy_from_ledgers((run.local, run.api), limit_s=plan.busy_lag_s)
    if lagged or plan.cpu_waiting is None or not timing_could_matter(run, plan):
        return lagged
    return busy_from_cpu([run.extra.get("cpu_waiting")], limit=plan.cpu_waiting)


#: What a gateway answers by itself when a route looks down or timed out: a busy machine can make those.
_ROUTE_DOWN = (502, 503, 504)


def _answered_alone_at_once(run: CaseRun, plan: GatewayPlan) -> bool:
    """Every answer came from the gateway itself (no route was asked) within half of `first_byte_s`, and none is
    one a route that looks down gives (a probe late on a busy machine can make a 503): no timeout can have
    fired, so however busy the machine, nothing was late (a gateway that answers a valid body 500)."""
    return all(
        isinstance(a.get("status"), int)
        and a["status"] not in _ROUTE_DOWN
        and a.get("done_at") is not None
        and float(a["done_at"]) - float(a.get("sent_at") or 0.0) < plan.first_byte_s / 2
        for a in run.answers
    )


def timing_could_matter(run: CaseRun, plan: GatewayPlan) -> bool:
    """Whether a busy machine could have made a right gateway answer this case wrongly: a case that waits on a
    stall, a probe, a stopped server or many requests, one whose local server answered within half of
    `first_byte_s` of the grader's send no longer, or one whose stream lasted half of `total_s` or more (a
    gateway starved of its cores relays it late, past `total_s`). A gateway handed a prompt 404 that still falls back is wrong
    however busy the machine, and so is one that answers at once without asking any route: its cores' wait
    excuses nothing there."""
    case = run.case
    if case.kind != "one" or case.stall_s or case.wait_probe or case.stop_local or case.warm_s:
        return True
    sent = min((float(a.get("sent_at") or 0.0) for a in run.answers), default=0.0)
    if sent and not run.local and not run.api and _answered_alone_at_once(run, plan):
        return False
    if not sent or not run.local:
        return True
    firsts = [
        min(float(v) for v in (r.get("headers_sent"), r.get("first_content"), r.get("finished")) if v)
        for r in run.local
        if any(r.get(k) for k in ("headers_sent", "first_content", "finished"))
    ]
    if not firsts or max(firsts) - sent >= plan.first_byte_s / 2:
        return True
    # a stream that took half of total_s or more: a gateway starved of its cores relays it late, past total_s
    ends = [float(r["finished"]) for r in (*run.local, *run.api) if r.get("finished")]
    return bool(ends) and max(ends) - sent >= plan.total_s / 2


def late_arrival(run: CaseRun, first_byte_s: float) -> str | None:
    """A case whose one request reached the local server, the route tried first, `first_byte_s` or more after
    the grader sent it to the gateway."""
    if run.case.kind != "one" or len(run.answers) != 1 or not run.local:
        return None
    sent = float(run.answers[0].get("sent_at") or 0.0)
    waited = min(float(r.get("arrival") or sent) for r in run.local) - sent
    if not sent or waited < first_byte_s:
        return None
    return (
        f"the local server saw the request {waited * 1000:.0f} ms after the grader sent it (first_byte_s is "
        f"{first_byte_s * 1000:.0f} ms): the machine was too busy to keep time"
    )


def statuses_of(records: list[dict[str, Any]]) -> str:
    return ",".join(str(r.get("status")) for r in records) or "none"


def case_check(criterion_id: str, per_case: Callable[[CaseRun], list[str]]) -> None:
    """Register a check that runs `per_case` over the cases the criterion's entry names."""

    def judge(gw: GatewayRun, criterion: Criterion) -> Verdict:
        return judge_cases(gw, criterion.cases, per_case)

    check("gateway", criterion_id)(judge)
