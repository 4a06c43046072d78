"""The gateway's criteria: every routing rule of the contract, judged from both servers' ledgers.

Each check reads the cases it needs from one `GatewayRun` (gateway_run.py) and returns a Verdict.
Where a request went, and how many times, comes from the local and the API ledgers; what the
client got comes from the HTTP answer the grader's client read; `/stats` is compared with what
the ledgers show. Each criterion's evidence is a timeline per case: the request, each ledger
record (route, time after the request was sent, status, how it ended) and the client's answer.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable
from typing import Any

from grader.contract import schema_errors
from grader.criteria.gateway_run import (
    API_MODEL,
    HEALTH_INTERVAL_S,
    LOCAL_MODEL,
    PRICE_OUT,
    CaseRun,
    GatewayRun,
)
from grader.criteria.truth import nearest_rank
from grader.criteria.verdict import Verdict, within
from grader.outcome import Evidence
from grader.rubric import Criterion

__all__ = ["CASES_OF", "CHECKS", "answer_route", "success_records"]

Check = Callable[[GatewayRun, Criterion], Verdict]
MODELS = {"local": LOCAL_MODEL, "api": API_MODEL}
_COLUMNS = ["case", "at (s)", "who", "what"]
RECOVER_MARGIN_S = 0.5       # traffic returns within health_interval_s + this
STREAM_TOLERANCE_S = 0.1     # first content at the client within this of the server's first content send


# -- reading answers ---------------------------------------------------------------------------

def _json(text: Any) -> Any:
    try:
        return json.loads(text)
    except (TypeError, ValueError):
        return None


def _events(answer: dict[str, Any]) -> list[tuple[float, str]]:
    return [(float(t), str(d)) for t, d in answer.get("events") or []]


def _is_stream(run: CaseRun, i: int = 0) -> bool:
    return bool(run.sent and run.sent[min(i, len(run.sent) - 1)].get("stream"))


def _complete(run: CaseRun, answer: dict[str, Any], i: int = 0) -> bool:
    """A whole successful answer: 200, and for a stream its last event is [DONE]."""
    if answer.get("status") != 200:
        return False
    if _is_stream(run, i):
        events = _events(answer)
        return bool(events) and events[-1][1].strip() == "[DONE]"
    body = _json(answer.get("body"))
    return isinstance(body, dict) and "choices" in body


def _error_body(answer: dict[str, Any]) -> bool:
    body = _json(answer.get("body"))
    return isinstance(body, dict) and "error" in body


def _content(answer: dict[str, Any]) -> tuple[str, float | None]:
    """The streamed content text and the arrival time of its first non-empty piece."""
    text, first = "", None
    for t, data in _events(answer):
        chunk = _json(data)
        if not isinstance(chunk, dict):
            continue
        for choice in chunk.get("choices") or []:
            piece = (choice.get("delta") or {}).get("content") if isinstance(choice, dict) else None
            if isinstance(piece, str) and piece:
                text += piece
                first = t if first is None else first
    return text, first


def _header(answer: dict[str, Any], name: str) -> str | None:
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


def _whole(record: dict[str, Any]) -> bool:
    """The server sent a whole answer: 200, and no fault that ended or broke the stream."""
    fault = (record.get("fault") or {}).get("kind")
    return (record.get("status") == 200 and fault not in ("cut", "no_done", "stream_error", "malformed_chunk")
            and record.get("finish_reason") not in ("abort", "error"))


def success_records(run: CaseRun) -> dict[str, list[dict[str, Any]]]:
    """Per route, the ledger records of attempts that gave the client a whole successful answer."""
    out: dict[str, list[dict[str, Any]]] = {"local": [], "api": []}
    if run.case.kind == "concurrent":
        ok = sum(_complete(run, a, i) for i, a in enumerate(run.answers))
        out["local"] = [r for r in run.local if r.get("status") == 200][:ok]
    else:
        for i, answer in enumerate(run.answers):
            if _complete(run, answer, i):
                route = answer_route(run, answer)
                records = [r for r in (run.api if route == "api" else run.local) if _whole(r)]
                if records:
                    out[route].append(records[min(len(out[route]), len(records) - 1)])
    for route in ("local", "api"):
        out[route] += [r for r in run.extra.get(f"warm_{route}", []) if r.get("status") == 200]
    return out


# -- evidence ----------------------------------------------------------------------------------

def _how(record: dict[str, Any]) -> str:
    fault = (record.get("fault") or {}).get("kind")
    chunks = sum(1 for c in record.get("chunks") or [] if c[1] == "content")
    return (f"HTTP {record.get('status')}" + (f", fault {fault}" if fault else "")
            + (f", ended {record['finish_reason']}" if record.get("finish_reason") else "")
            + (f", {chunks} content chunks" if chunks else ""))


def _timeline(run: CaseRun, *, limit: int = 12) -> list[list[Any]]:
    rows: list[list[Any]] = []
    for i, body in enumerate(run.sent[:limit]):
        answer = run.answers[i] if i < len(run.answers) else {}
        sent_at = answer.get("sent_at", run.t0)
        what = (f"POST /v1/chat/completions stream={bool(body.get('stream'))} max_tokens={body.get('max_tokens')}"
                + (f" require={json.dumps(body['require'])}" if "require" in body else ""))
        rows.append([run.case.name, round(sent_at - run.t0, 3), "client -> gateway", what])
    for route, records in (("local", run.local), ("api", run.api)):
        for record in records[:limit]:
            rows.append([run.case.name, round(float(record.get("arrival", run.t0)) - run.t0, 3), f"{route} ledger", _how(record)])
    if run.local_stopped:
        rows.append([run.case.name, 0.0, "local ledger", "server stopped: connections refused"])
    for i, answer in enumerate(run.answers[:limit]):
        events = _events(answer)
        tail = events[-1][1][:70] if events else (answer.get("body") or "")[:70]
        at = answer["done_at"] - run.t0 if "done_at" in answer else None
        rows.append([run.case.name, round(at, 3) if at is not None else "", "gateway -> client",
                     f"HTTP {answer.get('status')} route={_header(answer, 'x-gateway-route')} "
                     f"attempts={_header(answer, 'x-gateway-attempts')!r}" + (f" {len(events)} events" if events else "")
                     + f"; ends {tail!r}" + (f"; transport: {answer['error']}" if answer.get("error") else "")])
    rows[len(run.sent[:limit]):] = sorted(rows[len(run.sent[:limit]):], key=lambda r: (r[1] if r[1] != "" else 1e9))
    return rows


def _evidence(gw: GatewayRun, runs: Iterable[CaseRun], reported: str = "", truth: str = "") -> Evidence:
    runs = list(runs)
    sent = " ".join(f"`{r.case.name}`: {r.case.what}." for r in runs)
    rows = [row for r in runs for row in _timeline(r)]
    return Evidence(sent=sent, reported=reported, truth=truth, columns=list(_COLUMNS), rows=rows, logs=gw.logs)


def _judge(gw: GatewayRun, names: tuple[str, ...], per_case: Callable[[CaseRun], list[str]], *,
           reported: str = "", truth: str = "") -> Verdict:
    """Run `per_case` over the named cases; pass when none has a problem."""
    if not gw.started:
        return Verdict(False, f"the gateway did not start: {gw.start_problem}", evidence=_evidence(gw, []))
    runs = [gw.cases[n] for n in names if n in gw.cases]
    missing = [n for n in names if n not in gw.cases]
    problems = [f"{n}: not run" for n in missing]
    for run in runs:
        if run.problem:
            problems.append(f"{run.case.name}: {run.problem}")
            continue
        problems += [f"{run.case.name}: {p}" for p in per_case(run)]
    ok = not problems
    output = (f"all {len(runs)} cases right" if ok else f"{len(problems)} problem(s):\n- " + "\n- ".join(problems[:12]))
    return Verdict(ok, output, evidence=_evidence(gw, runs, reported, truth))


def _statuses(records: list[dict[str, Any]]) -> str:
    return ",".join(str(r.get("status")) for r in records) or "none"


# -- the checks --------------------------------------------------------------------------------

def _served_by(route: str) -> Callable[[CaseRun], list[str]]:
    def check(run: CaseRun) -> list[str]:
        answer = run.answers[0] if run.answers else {}
        out = []
        if not _complete(run, answer):
            out.append(f"the client got HTTP {answer.get('status')}" + (" without a whole stream ending in [DONE]"
                                                                         if _is_stream(run) else "") + f", expected a whole answer from the {route} route")
        records = run.api if route == "api" else run.local
        if not any(r.get("status") == 200 for r in records):
            out.append(f"the {route} ledger shows no answered request (statuses: {_statuses(records)})")
        other = run.local if route == "api" else run.api
        if route == "local" and other:
            out.append(f"the API ledger shows {len(other)} request(s); the API must not be asked")
        return out
    return check


def _fallback(run: CaseRun) -> list[str]:
    out = _served_by("api")(run)
    if not run.local and not run.local_stopped:
        out.append("the local ledger shows no attempt: the local route must be tried first")
    return out


def _no_local(check: Callable[[CaseRun], list[str]]) -> Callable[[CaseRun], list[str]]:
    def wrapped(run: CaseRun) -> list[str]:
        out = check(run)
        if run.local:
            out.append(f"the local ledger shows {len(run.local)} attempt(s) (HTTP {_statuses(run.local)}); "
                       "the local route must be skipped without sending")
        return out
    return wrapped


def _passed_through(run: CaseRun) -> list[str]:
    answer = run.answers[0] if run.answers else {}
    fault = run.case.local_faults[0]
    out = []
    if answer.get("status") != fault["status"]:
        out.append(f"the client got HTTP {answer.get('status')}, expected the local route's {fault['status']} unchanged")
    body = _json(answer.get("body"))
    message = body.get("error", {}).get("message") if isinstance(body, dict) and isinstance(body.get("error"), dict) else None
    if fault.get("message") and message != fault["message"]:
        out.append(f"the body's error.message is {message!r}, expected the local server's {fault['message']!r}")
    if run.api:
        out.append(f"the API ledger shows {len(run.api)} request(s): a 4xx must not fall back")
    return out


def _committed(run: CaseRun) -> list[str]:
    answer = run.answers[0] if run.answers else {}
    events = _events(answer)
    text, _ = _content(answer)
    out = []
    if answer.get("status") != 200 or not text:
        out.append(f"expected HTTP 200 with the content sent before the failure (got HTTP {answer.get('status')}, "
                   f"{len(text)} characters of content)")
    if any(d.strip() == "[DONE]" for _, d in events):
        out.append("the client's stream has [DONE]: an unfinished answer must not look complete")
    last = _json(events[-1][1]) if events else None
    if not (isinstance(last, dict) and "error" in last):
        out.append("the client's stream does not end with an error event (data: {\"error\": ...})")
    if run.case.name.startswith("local-") and run.api:
        out.append(f"the API ledger shows {len(run.api)} request(s): no fallback after the first byte")
    return out


def _refused_with(status: int, *, no_local: bool = False) -> Callable[[CaseRun], list[str]]:
    def check(run: CaseRun) -> list[str]:
        answer = run.answers[0] if run.answers else {}
        out = []
        if answer.get("status") != status or not _error_body(answer):
            out.append(f"the client got HTTP {answer.get('status')}, expected {status} with an error body")
        if run.api:
            out.append(f"the API ledger shows {len(run.api)} request(s): require: local must never reach the API")
        if no_local and run.local:
            out.append(f"the local ledger shows {len(run.local)} attempt(s): the route is known to be down or too "
                       "small, so nothing may be sent to it")
        return out
    return check


def _require_local_failure(run: CaseRun) -> list[str]:
    if run.case.name == "rl-404":
        out = _passed_through(run)
        return [p.replace("a 4xx must not fall back", "require: local must never reach the API") for p in out]
    return _refused_with(503)(run)


def _require_bad(run: CaseRun) -> list[str]:
    out = []
    for body, answer in zip(run.sent, run.answers, strict=False):
        if answer.get("status") != 400 or not _error_body(answer):
            out.append(f"require: {json.dumps(body.get('require'))} got HTTP {answer.get('status')}, expected 400 "
                       "with an OpenAI-style error body")
    if run.local or run.api:
        out.append(f"sent on although refused (local ledger {len(run.local)}, API ledger {len(run.api)})")
    return out


def _all_failed(status: int) -> Callable[[CaseRun], list[str]]:
    def check(run: CaseRun) -> list[str]:
        answer = run.answers[0] if run.answers else {}
        out = []
        if answer.get("status") != status or not _error_body(answer):
            out.append(f"the client got HTTP {answer.get('status')}, expected {status} with an error body")
        if _header(answer, "x-gateway-route") != "none":
            out.append(f"x-gateway-route is {_header(answer, 'x-gateway-route')!r}, expected 'none'")
        if not run.local or not run.api:
            out.append(f"expected one attempt on each route (local ledger {len(run.local)}, API ledger {len(run.api)})")
        return out
    return check


_ALL_FAILED = {"all-500": 502, "local-500-api-stall": 504, "local-stall-api-500": 502}


def _check_cases(names: tuple[str, ...], per_case: Callable[[CaseRun], list[str]]) -> Check:
    def check(gw: GatewayRun, criterion: Criterion) -> Verdict:
        return _judge(gw, names, per_case)
    return check


def _all_failed_check(gw: GatewayRun, criterion: Criterion) -> Verdict:
    return _judge(gw, tuple(_ALL_FAILED), lambda r: _all_failed(_ALL_FAILED[r.case.name])(r))


def _context(run: CaseRun) -> list[str]:
    if run.case.name == "fit-exact":
        return _served_by("local")(run)
    return _no_local(_served_by("api"))(run)


def _health(gw: GatewayRun, criterion: Criterion) -> Verdict:
    bound = HEALTH_INTERVAL_S + RECOVER_MARGIN_S
    margin: float | None = None

    def per_case(run: CaseRun) -> list[str]:
        nonlocal margin
        if run.case.name == "unhealthy-any":
            return _no_local(_served_by("api"))(run)
        after = run.extra.get("recovered_after_s")
        margin = float("inf") if after is None else within(after, 0.0, abs_s=bound)
        if after is None:
            return [(f"the local route did not serve again within {run.answers[-1]['done_at'] - run.t0 if run.answers else 0:.2f} s "
                    f"of /health turning healthy ({len(run.answers)} tries; allowed: {bound:g} s)")]
        if after > bound:
            return [f"the local route served again {after:.3f} s after /health turned healthy (allowed: {bound:g} s)"]
        return []

    verdict = _judge(gw, ("unhealthy-any", "recover"), per_case,
                     truth=f"recovery bound: health_interval_s {HEALTH_INTERVAL_S:g} s + {RECOVER_MARGIN_S:g} s")
    verdict.margin = margin if margin is not None and margin != float("inf") else None
    rec = gw.cases.get("recover")
    if rec is not None and "recovered_after_s" in rec.extra:
        verdict.output += f"\nserved locally again {rec.extra['recovered_after_s']:.3f} s after /health turned healthy"
    return verdict


def _single(run: CaseRun) -> bool:
    return run.case.kind == "one"


def _no_twice(gw: GatewayRun, criterion: Criterion) -> Verdict:
    names = tuple(n for n, r in gw.cases.items() if _single(r))

    def per_case(run: CaseRun) -> list[str]:
        return [f"the {route} ledger shows {len(records)} requests for one client request (HTTP {_statuses(records)})"
                for route, records in (("local", run.local), ("api", run.api)) if len(records) > 1]
    return _judge(gw, names, per_case)


def _streaming(gw: GatewayRun, criterion: Criterion) -> Verdict:
    worst = 0.0
    lines: list[str] = []

    def per_case(run: CaseRun) -> list[str]:
        nonlocal worst
        answer = run.answers[0] if run.answers else {}
        route = "local" if run.case.name == "slow-local-stream" else "api"
        records = [r for r in (run.local if route == "local" else run.api) if r.get("status") == 200]
        if not _complete(run, answer) or not records:
            return [(f"expected a whole stream from the {route} route (HTTP {answer.get('status')}, "
                    f"{len(records)} answered ledger records)")]
        sent = [c[0] for c in records[-1].get("chunks") or [] if c[1] == "content" and c[2]]
        _, first = _content(answer)
        if not sent or first is None:
            return ["no content to compare"]
        delay = first - sent[0]
        span = sent[-1] - sent[0]
        worst = max(worst, within(delay, 0.0, abs_s=STREAM_TOLERANCE_S))
        lines.append(f"{run.case.name}: first content {delay * 1000:.0f} ms after the {route} server sent it "
                     f"(its stream took {span:.2f} s)")
        if delay > STREAM_TOLERANCE_S:
            return [(f"the first content reached the client {delay:.3f} s after the server sent it (allowed "
                    f"{STREAM_TOLERANCE_S:g} s): the stream was held back")]
        return []

    verdict = _judge(gw, ("slow-local-stream", "slow-api-stream"), per_case)
    verdict.margin = worst
    verdict.output += ("\n" + "\n".join(lines)) if lines else ""
    return verdict


def _headers_true(run: CaseRun) -> list[str]:
    out = []
    for i, answer in enumerate(run.answers):
        expected_route = answer_route(run, answer)
        route = _header(answer, "x-gateway-route")
        attempts = _header(answer, "x-gateway-attempts")
        tried = [name for name, records in (("local", run.local), ("api", run.api)) if records]
        if run.case.kind == "recover":  # polls under require: local: only the one that was served reached local
            tried = ["local"] if answer.get("status") == 200 else []
        allowed = {",".join(tried)}
        if run.local_stopped:
            allowed |= {",".join(["local", *tried])}
        if route != expected_route:
            out.append(f"x-gateway-route is {route!r}; the ledgers show {expected_route!r}")
        if (attempts or "") not in allowed:
            out.append(f"x-gateway-attempts is {attempts!r}; the ledgers show {' or '.join(repr(a) for a in sorted(allowed))}")
        if answer.get("status") == 200 and expected_route in MODELS:
            model = MODELS[expected_route]
            if _is_stream(run, i):
                seen = {c.get("model") for c in (_json(d) for _, d in _events(answer)) if isinstance(c, dict) and "model" in c}
            else:
                body = _json(answer.get("body"))
                seen = {body.get("model")} if isinstance(body, dict) else {None}
            if seen != {model}:
                out.append(f"the answer names model {sorted(map(str, seen))}; the {expected_route} route's model is {model!r}")
        if run.case.kind not in ("one", "recover"):
            break
    return out


def _headers(gw: GatewayRun, criterion: Criterion) -> Verdict:
    names = tuple(n for n, r in gw.cases.items() if r.case.kind in ("one", "recover"))
    return _judge(gw, names, _headers_true)


def _route_stats(stats: Any, route: str) -> dict[str, Any] | None:
    if not isinstance(stats, dict) or schema_errors("gateway-stats", stats):
        return None
    return stats["routes"][route]


def _stats_problems(run: CaseRun) -> list[str]:
    """The case's /stats deltas, route by route, against what its ledgers show."""
    out = []
    for stats, when in ((run.stats_before, "before"), (run.stats_after, "after")):
        if not isinstance(stats, dict) or schema_errors("gateway-stats", stats):
            errors = schema_errors("gateway-stats", stats) if isinstance(stats, dict) else ["not a JSON object"]
            return [f"/stats {when} the case does not follow gateway-stats.schema.json: {'; '.join(errors[:3])}"]
    single = run.case.kind == "one"
    successes = success_records(run)
    for route, records in (("local", run.local), ("api", run.api)):
        if route == "local" and run.local_stopped:
            continue
        before, after = run.stats_before["routes"][route], run.stats_after["routes"][route]
        delta = {k: after[k] - before[k] for k in ("requests", "failures", "fallbacks")}
        n_ok = len([r for r in successes[route] if r not in run.extra.get(f"warm_{route}", [])])
        expected = {"requests": len(records), "failures": len(records) - n_ok,
                    "fallbacks": 1 if route == "local" and single and run.local and run.api else 0}
        for key, value in expected.items():
            if delta[key] != value:
                out.append(f"{route}.{key} went up by {delta[key]}; the ledgers show {value}")
    return out


def _stats_counts(gw: GatewayRun, criterion: Criterion) -> Verdict:
    names = tuple(n for n, r in gw.cases.items() if r.case.kind in ("one", "recover", "concurrent", "require-bad"))
    return _judge(gw, names, _stats_problems)


def _cost_problems(run: CaseRun) -> list[str]:
    local = [_route_stats(s, "local") for s in (run.stats_before, run.stats_after)]
    api = [_route_stats(s, "api") for s in (run.stats_before, run.stats_after)]
    if None in local or None in api:
        return ["/stats does not follow gateway-stats.schema.json"]
    out = []
    spent = api[1]["cost_usd"] - api[0]["cost_usd"]  # type: ignore[index]
    # An attempt abandoned before any chunk (a stall before the headers) never told the gateway its usage:
    # its cost may be counted or not. Every other attempt's cost must be.
    billed = sum(float(r.get("cost_usd") or 0.0) for r in run.api)
    told = sum(float(r.get("cost_usd") or 0.0) for r in run.api if r.get("chunks") or not r.get("stream"))
    told -= sum(float(r.get("cost_usd") or 0.0) for r in run.api
                if not r.get("chunks") and not r.get("stream") and r.get("finish_reason") == "abort")
    cut = sum(1 for r in run.api if r.get("finish_reason") in ("abort", "error") or (r.get("fault") or {}).get("kind") == "cut")
    allowed = 1e-9 + cut * PRICE_OUT / 1e6
    if not told - allowed <= spent <= billed + allowed:
        truth = f"{billed:.9f}" if abs(billed - told) < 1e-12 else f"{told:.9f} to {billed:.9f}"
        out.append(f"api.cost_usd went up by {spent:.9f}; the API ledger's cost_usd is {truth} "
                   f"(allowed difference {allowed:.9f})")
    if local[1]["cost_usd"] != local[0]["cost_usd"]:  # type: ignore[index]
        out.append("local.cost_usd changed; the local route costs nothing")
    return out


def _stats_cost(gw: GatewayRun, criterion: Criterion) -> Verdict:
    names = tuple(n for n, r in gw.cases.items() if r.case.kind in ("one", "concurrent", "recover"))
    return _judge(gw, names, _cost_problems,
                  truth=f"API prices: output {PRICE_OUT:g} USD per million tokens; a stream cut mid-way may be "
                        "one output token under the ledger")


def _stats_latency(gw: GatewayRun, criterion: Criterion) -> Verdict:
    if not gw.started:
        return Verdict(False, f"the gateway did not start: {gw.start_problem}", evidence=_evidence(gw, []))
    runs = [r for r in gw.cases.values() if r.case.kind != "startup" and not r.problem]
    last = runs[-1].stats_after if runs else None
    problems, worst, rows = [], 0.0, []
    for route in ("local", "api"):
        # Each success's latency as the gateway sees it lies between the server's (arrival to last chunk) and
        # the grader's client's (sent to last byte); so does each nearest-rank percentile of them.
        latencies = sorted(float(r["finished"]) - float(r["arrival"])
                           for run in runs for r in success_records(run)[route]
                           if r.get("finished") is not None and r.get("arrival") is not None)
        uppers = sorted(d for run in runs for d in _client_durations(run, route))
        reported = _route_stats(last, route)
        if reported is None:
            why = schema_errors("gateway-stats", last)[:2] if isinstance(last, dict) else [repr(last)[:200]]
            problems.append(f"/stats at the end does not follow gateway-stats.schema.json: {'; '.join(why)}")
            break
        got = reported["latency_s"]
        if got.get("n") != len(latencies):
            problems.append(f"{route}.latency_s.n is {got.get('n')}; the ledgers show {len(latencies)} successful attempts")
            continue
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
            margin = within(error, truth, abs_s=criterion.abs_s, rel=criterion.rel)
            worst = max(worst, margin)
            if margin > 1:
                problems.append(f"{route}.latency_s.{key} is {value:.4f} s; the ledgers give {truth:.4f} s and the "
                                f"grader's client {upper:.4f} s (allowed {criterion.tolerance_text} outside)")
    ok = not problems
    evidence = Evidence(sent=f"every case's successful attempts ({len(runs)} cases)",
                        truth="ledger latency: arrival to the last chunk sent, successful attempts only",
                        columns=["when", "route", "percentile", "/stats / ledgers"], rows=rows, logs=gw.logs)
    return Verdict(ok, "latency percentiles agree with the ledgers" if ok else "\n".join(problems),
                   margin=worst, evidence=evidence)


def _client_durations(run: CaseRun, route: str) -> list[float]:
    """The grader's client's time, sent to last byte, of each whole successful answer from `route`."""
    out = []
    for i, answer in enumerate(run.answers):
        if not _complete(run, answer, i):
            continue
        if run.case.kind == "concurrent":
            if route == "local":
                out.append(_events(answer)[-1][0] - run.t0)
        elif answer_route(run, answer) == route and "done_at" in answer:
            out.append(answer["done_at"] - answer["sent_at"])
    if route == "local":
        out += run.extra.get("warm_durations", [])
    return out


def _concurrency(run: CaseRun) -> list[str]:
    direct = run.extra.get("direct") or []
    out = []
    whole = sum(_complete(run, a, i) for i, a in enumerate(run.answers))
    if whole != len(run.sent):
        out.append(f"{whole} of {len(run.sent)} streams arrived whole (200 and [DONE])")
    mixed = 0
    for answer, alone in zip(run.answers, direct, strict=False):
        text, _ = _content(answer)
        expected, _ = _content(alone)
        if not expected or text != expected:
            mixed += 1
    if mixed:
        out.append(f"{mixed} stream(s) differ from the text the local server sends for the same request alone "
                   "(missing, reordered or mixed content)")
    if len(run.local) != len(run.sent) or run.api:
        out.append(f"the ledgers show {len(run.local)} local and {len(run.api)} API requests for {len(run.sent)} streams")
    return out


def _starts(run: CaseRun) -> list[str]:
    out = []
    health = run.answers[0] if run.answers else {}
    if health.get("status") != 200:
        out.append(f"GET /health answered {health.get('status')}, expected 200")
    stats = run.stats_after
    errors = schema_errors("gateway-stats", stats) if isinstance(stats, dict) else ["not a JSON object"]
    if errors:
        out.append(f"GET /stats does not follow gateway-stats.schema.json: {'; '.join(errors[:3])}")
    return out


def _cases(names: tuple[str, ...], per_case: Callable[[CaseRun], list[str]]) -> Check:
    return _check_cases(names, per_case)


_SERVED_API_NO_LOCAL = _no_local(_served_by("api"))

CASES_OF: dict[str, tuple[str, ...]] = {
    "gateway.starts": ("startup",),
    "gateway.fallback-5xx": ("local-500", "local-502-stream", "local-503"),
    "gateway.fallback-timeout": ("local-stall-before-headers", "local-stall-after-headers"),
    "gateway.fallback-refused": ("refused", "refused-stream"),
    "gateway.no-fallback-4xx": ("local-400", "local-404", "local-404-stream", "local-429"),
    "gateway.committed-stream": ("local-cut", "local-stream-error", "local-no-done", "api-cut"),
    "gateway.require-field": ("require-bad",),
    "gateway.require-local-failure": ("rl-500", "rl-stall", "rl-stall-stream", "rl-404", "rl-refused"),
    "gateway.require-local-unhealthy": ("rl-unhealthy-stall", "rl-unhealthy", "rl-health-stale"),
    "gateway.require-local-too-long": ("rl-too-long",),
    "gateway.context-check": ("too-long-any", "fit-exact", "fit-over-by-one"),
    "gateway.health-probe": ("unhealthy-any", "recover"),
    "gateway.all-failed": tuple(_ALL_FAILED),
    "gateway.streaming": ("slow-local-stream", "slow-api-stream"),
    "gateway.concurrency": ("concurrent",),
}

CHECKS: dict[str, Check] = {
    "gateway.starts": _cases(CASES_OF["gateway.starts"], _starts),
    "gateway.fallback-5xx": _cases(CASES_OF["gateway.fallback-5xx"], _fallback),
    "gateway.fallback-timeout": _cases(CASES_OF["gateway.fallback-timeout"], _fallback),
    "gateway.fallback-refused": _cases(CASES_OF["gateway.fallback-refused"], _fallback),
    "gateway.no-fallback-4xx": _cases(CASES_OF["gateway.no-fallback-4xx"], _passed_through),
    "gateway.committed-stream": _cases(CASES_OF["gateway.committed-stream"], _committed),
    "gateway.require-field": _cases(CASES_OF["gateway.require-field"], _require_bad),
    "gateway.require-local-failure": _cases(CASES_OF["gateway.require-local-failure"], _require_local_failure),
    "gateway.require-local-unhealthy": _cases(
        CASES_OF["gateway.require-local-unhealthy"],
        _refused_with(503, no_local=True)),
    "gateway.require-local-too-long": _cases(CASES_OF["gateway.require-local-too-long"], _refused_with(400, no_local=True)),
    "gateway.context-check": _cases(CASES_OF["gateway.context-check"], _context),
    "gateway.health-probe": _health,
    "gateway.no-route-twice": _no_twice,
    "gateway.all-failed": _all_failed_check,
    "gateway.streaming": _streaming,
    "gateway.headers": _headers,
    "gateway.stats-counts": _stats_counts,
    "gateway.stats-cost": _stats_cost,
    "gateway.stats-latency": _stats_latency,
    "gateway.concurrency": _cases(CASES_OF["gateway.concurrency"], _concurrency),
}
