"""The gateway's /stats against the ledgers: counts, cost and latency per route."""

from __future__ import annotations

import json
from functools import lru_cache
from typing import Any

from grader.contract import schema_errors
from grader.criteria.gateway.answers import (
    BUSY,
    answer_events,
    answer_route,
    case_evidence,
    is_complete,
    judge_cases,
    success_records,
    too_busy,
)
from grader.criteria.registry import check
from grader.criteria.truth import nearest_rank
from grader.criteria.verdict import Verdict, within
from grader.outcome import Evidence
from grader.records.gateway import CaseRun, GatewayRun
from grader.rubric import Criterion

__all__ = ["route_stats", "stats_cost", "stats_counts", "stats_errors", "stats_latency"]


@lru_cache(maxsize=4096)
def _errors_of(text: str) -> tuple[str, ...]:
    return tuple(schema_errors("gateway-stats", json.loads(text)))


def stats_errors(stats: Any) -> list[str]:
    """Every way a /stats answer breaks gateway-stats.schema.json (checked once per distinct answer)."""
    if not isinstance(stats, dict):
        return ["not a JSON object"]
    return list(_errors_of(json.dumps(stats, sort_keys=True)))


def route_stats(stats: Any, route: str) -> dict[str, Any] | None:
    if stats_errors(stats):
        return None
    found: dict[str, Any] = stats["routes"][route]
    return found


def stats_problems(run: CaseRun) -> list[str]:
    """The case's /stats deltas, route by route, against what its ledgers show."""
    out = []
    for stats, when in ((run.stats_before, "before"), (run.stats_after, "after")):
        if errors := stats_errors(stats):
            return [f"/stats {when} the case does not follow gateway-stats.schema.json: {'; '.join(errors[:3])}"]
    single = run.case.kind == "one"
    successes = success_records(run)
    for route, records in (("local", run.local), ("api", run.api)):
        if route == "local" and run.local_stopped:
            continue
        before, after = run.stats_before["routes"][route], run.stats_after["routes"][route]
        delta = {k: after[k] - before[k] for k in ("requests", "failures", "fallbacks")}
        n_ok = len([r for r in successes[route] if r not in run.extra.get(f"warm_{route}", [])])
        expected = {
            "requests": len(records),
            "failures": len(records) - n_ok,
            "fallbacks": 1 if route == "local" and single and run.local and run.api else 0,
        }
        for key, value in expected.items():
            if delta[key] != value:
                out.append(f"{route}.{key} went up by {delta[key]}; the ledgers show {value}")
    return out


@check("gateway", "gateway.stats-counts")
def stats_counts(gw: GatewayRun, criterion: Criterion) -> Verdict:
    names = tuple(
        n
        for n, r in gw.cases.items()
        if r.case.kind in ("one", "recover", "concurrent", "many", "require-bad", "require-null")
    )
    return judge_cases(
        gw,
        names,
        stats_problems,
        evidence=(lambda run: bool(run.local or run.api), "an attempt on either route to count"),
    )


def cost_problems(run: CaseRun, price_out: float) -> list[str]:
    """The case's API cost in /stats against the API ledger's; `price_out` USD per million output tokens."""
    local = [route_stats(s, "local") for s in (run.stats_before, run.stats_after)]
    api = [route_stats(s, "api") for s in (run.stats_before, run.stats_after)]
    if None in local or None in api:
        return ["/stats does not follow gateway-stats.schema.json"]
    out = []
    spent = api[1]["cost_usd"] - api[0]["cost_usd"]  # type: ignore[index]
    # An attempt abandoned before any chunk (a stall before the headers) never told the gateway its usage:
    # its cost may be counted or not. Every other attempt's cost must be.
    billed = sum(float(r.get("cost_usd") or 0.0) for r in run.api)
    told = sum(float(r.get("cost_usd") or 0.0) for r in run.api if r.get("chunks") or not r.get("stream"))
    told -= sum(
        float(r.get("cost_usd") or 0.0)
        for r in run.api
        if not r.get("chunks") and not r.get("stream") and r.get("finish_reason") == "abort"
    )
    cut = sum(
        1
        for r in run.api
        if r.get("finish_reason") in ("abort", "error") or (r.get("fault") or {}).get("kind") == "cut"
    )
    allowed = 1e-9 + cut * price_out / 1e6
    if not told - allowed <= spent <= billed + allowed:
        truth = f"{billed:.9f}" if abs(billed - told) < 1e-12 else f"{told:.9f} to {billed:.9f}"
        out.append(
            f"api.cost_usd went up by {spent:.9f}; the API ledger's cost_usd is {truth} "
            f"(allowed difference {allowed:.9f})"
        )
    if local[1]["cost_usd"] != local[0]["cost_usd"]:  # type: ignore[index]
        out.append("local.cost_usd changed; the local route costs nothing")
    return out


@check("gateway", "gateway.stats-cost")
def stats_cost(gw: GatewayRun, criterion: Criterion) -> Verdict:
    names = tuple(n for n, r in gw.cases.items() if r.case.kind in ("one", "concurrent", "many", "recover"))
    price = gw.plan.price_out
    return judge_cases(
        gw,
        names,
        lambda run: cost_problems(run, price),
        truth=f"API prices: output {price:g} USD per million tokens; a stream cut mid-way may be "
        "one output token under the ledger",
        evidence=(
            lambda run: any(float(r.get("cost_usd") or 0) > 0 for r in run.api),
            "an API attempt that cost anything",
        ),
    )


@check("gateway", "gateway.stats-latency", needs=("abs_s", "rel"))
def stats_latency(gw: GatewayRun, criterion: Criterion) -> Verdict:
    if not gw.started:
        return Verdict(False, f"the gateway did not start: {gw.start_problem}", evidence=case_evidence(gw, []))
    # The end's /stats counts the first start of the gateway only: the refused cases' own starts
    # (quiet_probe) keep statistics of their own, judged case by case in stats_counts and stats_cost.
    runs = [r for r in gw.cases.values() if r.case.kind != "startup" and not r.problem and not r.case.quiet_probe]
    last = runs[-1].stats_after if runs else None
    problems, worst, rows = [], 0.0, []
    for route in ("local", "api"):
        # Each success's latency as the gateway sees it lies between the server's (arrival to last chunk) and
        # the grader's client's (sent to last byte); so does each nearest-rank percentile of them.
        latencies = sorted(
            float(r["finished"]) - float(r["arrival"])
            for run in runs
            for r in success_records(run)[route]
            if r.get("finished") is not None and r.get("arrival") is not None
        )
        uppers = sorted(d for run in runs for d in client_durations(run, route))
        reported = route_stats(last, route)
        if reported is None:
            why = stats_errors(last)[:2] if isinstance(last, dict) else [repr(last)[:200]]
            problems.append(f"/stats at the end does not follow gateway-stats.schema.json: {'; '.join(why)}")
            break
        got = reported["latency_s"]
        if got.get("n") != len(latencies):
            problems.append(
                f"{route}.latency_s.n is {got.get('n')}; the ledgers show {len(latencies)} successful attempts"
            )
            continue
        if got.get("p99_is_max") is not (len(latencies) < 100):
            problems.append(
                f"{route}.latency_s.p99_is_max is {got.get('p99_is_max')!r} with n = {len(latencies)}; "
                f"it is true exactly when n < 100"
            )
        for key, p in (("p50", 50), ("p90", 90), ("p99", 99), ("max", 100)):
            truth = nearest_rank(latencies, p) if latencies else None
            value = got.get(key)
            rows.append(["end", route, key, f"{value} / {truth if truth is None else round(truth, 4)}"])
            if truth is None:
                if value is not None:
                    problems.append(f"{route}.latency_s.{key} is {value}; with no samples it is null")
                continue
            if not isinstance(value, int | float):
                problems.append(f"{route}.latency_s.{key} is {value!r}, expected a number")
                continue
            # The client's view bounds the gateway's from above; where some of its samples are
            # missing, its percentile still bounds the band (never below the ledger's).
            upper = max(truth, nearest_rank(uppers, p) or truth) if uppers else truth
            top = upper
            error = 0.0 if truth <= value <= max(truth, top) else (value - truth if value < truth else value - top)
            margin = within(error, truth, abs_s=criterion.tol("abs_s"), rel=criterion.tol("rel"))
            worst = max(worst, margin)
            if margin > 1:
                problems.append(
                    f"{route}.latency_s.{key} is {value:.4f} s; the ledgers give {truth:.4f} s and the "
                    f"grader's client {upper:.4f} s (allowed {criterion.tolerance_text} outside)"
                )
    if not problems and not any(success_records(run)[route] for run in runs for route in ("local", "api")):
        problems.append("nothing to judge: no case shows a successful attempt, so no latency to compare")
    ok = not problems
    unsure = bool(problems) and any(too_busy(r) for r in runs)  # a busy fallback moves these counts too
    if unsure:
        problems.append(BUSY)
    evidence = Evidence(
        sent=f"every case's successful attempts ({len(runs)} cases)",
        truth="ledger latency: arrival to the last chunk sent, successful attempts only",
        columns=["when", "route", "percentile", "/stats / ledgers"],
        rows=rows,
        logs=gw.logs,
    )
    return Verdict(
        ok,
        "latency percentiles agree with the ledgers" if ok else "\n".join(problems),
        margin=1.0 if unsure else worst,
        evidence=evidence,
    )


def client_durations(run: CaseRun, route: str) -> list[float]:
    """The grader's client's time, sent to last byte, of each whole successful answer from `route`."""
    out = []
    for i, answer in enumerate(run.answers):
        if not is_complete(run, answer, i):
            continue
        if run.case.kind == "concurrent":
            if route == "local":
                out.append(answer_events(answer)[-1][0] - run.t0)
        elif answer_route(run, answer) == route and "done_at" in answer:
            out.append(answer["done_at"] - answer["sent_at"])
    if route == "local":
        out += run.extra.get("warm_durations", [])
    return out
