"""The candidate's own figures a question cites, each computed from the grade's run records.

A question in the bank (grader/unseen/questions.yaml) names one figure; the figure reads the records the
criterion was judged from and gives the fields the question's text names: the request whose `start` came
closest to the send-lead limit, the case where the gateway's route header differed from the ledgers', the
summary the candidate reported. A figure that has nothing to cite in a run (no successful request, no case
with a fallback) gives None, and the guide asks another of the criterion's questions.

    FIGURES["start-lead"].fields        # ("request", "lead_ms", "limit_ms", "n")
    FIGURES["start-lead"].of(seen)      # {"request": "baseline#7", "lead_ms": "62", ...} or None
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from grader.criteria.gateway.answers import answer_content, answer_header, answer_route, is_stream
from grader.criteria.loadgen.evidence import num
from grader.criteria.loadgen.observed import Observed
from grader.criteria.truth import max_in_flight
from grader.outcome import CriterionResult
from grader.records.gateway import CaseRun, GatewayRun
from grader.records.sizing import SizingRuns
from grader.rubric import Criterion

__all__ = ["FIGURES", "Figure", "Seen", "field_names"]

Values = dict[str, str]


@dataclass(frozen=True)
class Seen:
    """What a figure reads: the criterion, its result, the loaded records it was judged from, and the one line
    of evidence the guide shows for it (the failure, the close call or the verdict)."""

    criterion: Criterion
    result: CriterionResult
    runs: list[Any]  # the section's loaded records: Observed, GatewayRun, SizingRuns, ...
    evidence: str
    failing: tuple[str, ...] = ()  # the requests or cases that failed it (grading/side_by_side.py)


@dataclass(frozen=True)
class Figure:
    fields: tuple[str, ...]
    of: Callable[[Seen], Values | None]


def _ms(seconds: float) -> str:
    return f"{seconds * 1000:.0f}"


def _g(value: Any) -> str:
    return f"{value:.4g}" if isinstance(value, float) else str(value)


def _evidence(seen: Seen) -> Values:
    return {"evidence": seen.evidence}


def _verdict(seen: Seen) -> Values:
    lines = [ln.strip(" -") for ln in seen.result.output.splitlines() if ln.strip()]
    return {"verdict": lines[0] if lines else seen.result.status}


def _margin(seen: Seen) -> Values | None:
    if seen.result.margin is None:
        return None
    return {"margin": f"{seen.result.margin:.2f}", "tolerance": seen.result.tolerance or "its tolerance"}


def _loadgen(seen: Seen) -> list[Observed]:
    return [run for run in seen.runs if isinstance(run, Observed) and not run.stopped]


def _ok_pairs(seen: Seen) -> list[tuple[str, dict[str, Any], Any]]:
    """(label, reported, truth) of every successful request the ledger and the candidate agree on pairing."""
    out = []
    for run in _loadgen(seen):
        for pair in run.pairs:
            if pair.reported is not None and pair.truth is not None and pair.truth.outcome == "ok":
                out.append((f"{run.scenario.name}#{pair.reported.get('index')}", pair.reported, pair.truth))
    return out


def _start_lead(seen: Seen) -> Values | None:
    """The request whose `start` came closest to (or furthest past) the send-lead limit."""
    leads = [
        (truth.arrival - start, label)
        for label, rep, truth in _ok_pairs(seen)
        if (start := num(rep.get("start"))) is not None
    ]
    if not leads or "send_lead_s" not in seen.criterion.tolerance:
        return None
    lead, label = max(leads)
    return {
        "request": label,
        "lead_ms": _ms(lead),
        "limit_ms": _ms(seen.criterion.tol("send_lead_s")),
        "n": str(len(leads)),
    }


def _stop_error(seen: Seen) -> Values | None:
    """The request whose TTFT stopped furthest from the first content chunk the server sent."""
    errors = []
    for label, rep, truth in _ok_pairs(seen):
        start, ttft = num(rep.get("start")), num(rep.get("ttft_s"))
        if start is not None and ttft is not None and truth.first_content is not None:
            errors.append((abs(start + ttft - truth.first_content), start + ttft - truth.first_content, label))
    if not errors or seen.criterion.abs_s is None:
        return None
    _, error, label = max(errors)
    return {"request": label, "error_ms": f"{error * 1000:+.0f}", "limit_ms": _ms(seen.criterion.abs_s)}


def _tps_error(seen: Seen) -> Values | None:
    found = []
    for label, rep, truth in _ok_pairs(seen):
        tps = num(rep.get("tps"))
        if tps is not None and truth.tps:
            found.append((abs(tps - truth.tps) / truth.tps, label, tps, truth.tps))
    if not found:
        return None
    off, label, yours, ledger = max(found)
    return {"request": label, "yours": f"{yours:.1f}", "ledger": f"{ledger:.1f}", "percent": f"{off * 100:.1f}"}


def _outcome(seen: Seen) -> Values | None:
    """The first request whose outcome differs from the ledger's; else the first one a fault hit."""
    rows = []
    for run in _loadgen(seen):
        for pair in run.pairs:
            rep, truth = pair.reported or {}, pair.truth
            if truth is None:
                continue
            yours = f"{rep.get('outcome')}" + (f"/{rep.get('failure')}" if rep.get("failure") else "")
            ledger = truth.outcome + (f"/{' or '.join(sorted(truth.reasons))}" if truth.reasons else "")
            label = f"{run.scenario.name}#{rep.get('index', truth.number)}"
            differs = rep.get("outcome") != truth.outcome or (
                truth.outcome == "failed" and rep.get("failure") not in truth.reasons
            )
            rows.append((not differs, truth.fault is None, label, yours, ledger, truth.fault or "no fault"))
    if not rows:
        return None
    _, _, label, yours, ledger, fault = min(rows, key=lambda r: (r[0], r[1]))
    return {"request": label, "yours": yours, "ledger": ledger, "fault": fault}


def _peak(seen: Seen) -> Values | None:
    runs = _loadgen(seen)
    if not runs:
        return None
    run = runs[0]
    return {
        "scenario": run.scenario.name,
        "peak": str(max_in_flight([(t.arrival, t.end) for t in run.truths])),
        "asked": str(run.scenario.loadgen["concurrency"]),
    }


def _summary(seen: Seen) -> Values | None:
    """The summary the candidate reported for the first of the criterion's runs."""
    runs = [run for run in _loadgen(seen) if run.summary]
    if not runs:
        return None
    run, summary = runs[0], runs[0].summary
    ttft = summary.get("ttft_s") if isinstance(summary.get("ttft_s"), dict) else {}
    assert isinstance(ttft, dict)
    return {
        "scenario": run.scenario.name,
        "ok": _g(summary.get("ok")),
        "failed": _g(summary.get("failed")),
        "empty": _g(summary.get("empty")),
        "output_tokens": _g(summary.get("output_tokens")),
        "wall_s": _g(summary.get("wall_s")),
        "throughput": _g(summary.get("throughput_tokens_per_s")),
        "p99": _g(ttft.get("p99")),
        "n": _g(ttft.get("n")),
    }


def _gateway(seen: Seen) -> GatewayRun | None:
    run = next((r for r in seen.runs if isinstance(r, GatewayRun)), None)
    return run if run is not None and run.started else None


def _cases(seen: Seen, run: GatewayRun) -> list[CaseRun]:
    names = seen.criterion.cases or tuple(run.cases)
    return [run.cases[n] for n in names if n in run.cases and run.cases[n].case.kind == "one" and run.cases[n].answers]


def _ledger_route(case: CaseRun) -> str:
    return ",".join(name for name, records in (("local", case.local), ("api", case.api)) if records) or "none"


def _route(seen: Seen) -> Values | None:
    """The case where the gateway's route header differed from the ledgers'; else one whose route it fell back."""
    run = _gateway(seen)
    if run is None:
        return None
    picks = []
    for case in _cases(seen, run):
        answer = case.answers[0]
        header = answer_header(answer, "x-gateway-route")
        ledgers = answer_route(case, answer)
        differs = header != ledgers or (answer_header(answer, "x-gateway-attempts") or "") != _ledger_route(case)
        picks.append((not differs, not (case.local and case.api), case, header, ledgers, answer))
    if not picks:
        return None
    agrees, _, case, header, ledgers, answer = min(picks, key=lambda p: (p[0], p[1]))
    return {
        "case": case.case.name,
        "what": case.case.what,
        "status": str(answer.get("status")),
        "route": str(header),
        "attempts": str(answer_header(answer, "x-gateway-attempts")),
        "ledger_route": ledgers,
        "ledger_attempts": _ledger_route(case),
        "agreement": "agreed with" if agrees else "differed from",
    }


def _case(seen: Seen) -> Values | None:
    """The first case that failed the criterion (else its first case): what the client got and both ledgers."""
    run = _gateway(seen)
    if run is None:
        return None
    cases = _cases(seen, run)
    failing = [c for c in cases if any(f.split(" (")[0] == c.case.name for f in seen.failing)]
    if not (failing or cases):
        return None
    chosen = (failing or cases)[0]
    answer = chosen.answers[0]
    took = float(answer.get("done_at", 0.0)) - float(answer.get("sent_at", 0.0))
    _, first = answer_content(answer)
    return {
        "case": chosen.case.name,
        "what": chosen.case.what,
        "status": str(answer.get("status")),
        "route": str(answer_header(answer, "x-gateway-route")),
        "local": ",".join(str(r.get("status")) for r in chosen.local) or "nothing",
        "api": ",".join(str(r.get("status")) for r in chosen.api) or "nothing",
        "ms": _ms(took),
        "first_ms": _ms(first - float(answer["sent_at"])) if first is not None and "sent_at" in answer else "-",
        "stream": "streamed" if is_stream(chosen) else "not streamed",
    }


def _slowest(seen: Seen) -> Values | None:
    """The case the client waited longest for, against the first-byte timeout."""
    run = _gateway(seen)
    if run is None:
        return None
    timed = [
        (float(c.answers[0].get("done_at", 0.0)) - float(c.answers[0].get("sent_at", 0.0)), c)
        for c in _cases(seen, run)
    ]
    if not timed:
        return None
    took, case = max(timed, key=lambda t: t[0])
    return {
        "case": case.case.name,
        "what": case.case.what,
        "ms": _ms(took),
        "first_byte_ms": _ms(run.plan.first_byte_s),
        "route": str(answer_header(case.answers[0], "x-gateway-route")),
    }


def _recovery(seen: Seen) -> Values | None:
    run = _gateway(seen)
    if run is None:
        return None
    case = next((c for c in run.cases.values() if c.case.kind == "recover"), None)
    after = case.extra.get("recovered_after_s") if case is not None else None
    if after is None or "margin_s" not in seen.criterion.tolerance:
        return None
    bound = run.plan.health_interval_s + seen.criterion.tol("margin_s")
    return {"after_ms": _ms(float(after)), "bound_ms": _ms(bound), "tries": str(len(case.answers) if case else 0)}


def _stats(seen: Seen) -> Values | None:
    """/stats per route at the end of the run, as the gateway reported it."""
    run = _gateway(seen)
    if run is None:
        return None
    last = next((c.stats_after for c in reversed(list(run.cases.values())) if isinstance(c.stats_after, dict)), None)
    routes = (last or {}).get("routes") if isinstance(last, dict) else None
    if not isinstance(routes, dict) or not all(isinstance(routes.get(r), dict) for r in ("local", "api")):
        return None
    local, api = routes["local"], routes["api"]
    return {
        "local_requests": _g(local.get("requests")),
        "local_failures": _g(local.get("failures")),
        "local_fallbacks": _g(local.get("fallbacks")),
        "api_requests": _g(api.get("requests")),
        "api_cost": _g(api.get("cost_usd")),
    }


def _sizing(seen: Seen) -> Values | None:
    """The seed input set's replicas and first cost per million, as the candidate's command printed them."""
    runs = next((r for r in seen.runs if isinstance(r, SizingRuns)), None)
    if runs is None:
        return None
    base = next((r for r in runs.runs if r.output is not None), None)
    if base is None or base.output is None:
        return None
    cost = base.output.get("cost_per_million_output_tokens")
    first = cost[0] if isinstance(cost, list) and cost and isinstance(cost[0], dict) else {}
    return {
        "set": base.name,
        "replicas": _g(base.output.get("replicas")),
        "cost": _g(first.get("usd")),
        "utilisation": _g(first.get("utilisation")),
    }


FIGURES: dict[str, Figure] = {
    "evidence": Figure(("evidence",), _evidence),
    "verdict": Figure(("verdict",), _verdict),
    "margin": Figure(("margin", "tolerance"), _margin),
    "start-lead": Figure(("request", "lead_ms", "limit_ms", "n"), _start_lead),
    "stop-error": Figure(("request", "error_ms", "limit_ms"), _stop_error),
    "tps-error": Figure(("request", "yours", "ledger", "percent"), _tps_error),
    "outcome": Figure(("request", "yours", "ledger", "fault"), _outcome),
    "peak": Figure(("scenario", "peak", "asked"), _peak),
    "summary": Figure(
        ("scenario", "ok", "failed", "empty", "output_tokens", "wall_s", "throughput", "p99", "n"), _summary
    ),
    "route": Figure(
        ("case", "what", "status", "route", "attempts", "ledger_route", "ledger_attempts", "agreement"), _route
    ),
    "case": Figure(("case", "what", "status", "route", "local", "api", "ms", "first_ms", "stream"), _case),
    "slowest-case": Figure(("case", "what", "ms", "first_byte_ms", "route"), _slowest),
    "recovery": Figure(("after_ms", "bound_ms", "tries"), _recovery),
    "stats": Figure(("local_requests", "local_failures", "local_fallbacks", "api_requests", "api_cost"), _stats),
    "sizing": Figure(("set", "replicas", "cost", "utilisation"), _sizing),
}


def field_names() -> dict[str, tuple[str, ...]]:
    """Figure name -> the fields it gives: what the question bank is checked against."""
    return {name: figure.fields for name, figure in FIGURES.items()}
