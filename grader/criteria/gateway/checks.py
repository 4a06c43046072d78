"""The gateway's criteria: every routing rule of the contract, judged from both servers' ledgers.

Each check reads the cases its rubric entry names (`cases:`) from one `GatewayRun` (running/gateway.py)
and returns a Verdict. Where a request went, and how many times, comes from the local and the API
ledgers; what the client got comes from the HTTP answer the grader's client read. What a case
expects follows from the case itself (its faults, its request), never from its name. Reading
answers and the evidence timeline live in `answers.py`; how an answer reaches the client (streamed as it
arrives, its headers, side by side with others) in `delivery.py`; the `/stats` checks in `stats.py`.
"""

from __future__ import annotations

import itertools
import json
from collections.abc import Callable

from grader.criteria.gateway.answers import (
    answer_content,
    answer_events,
    answer_header,
    case_check,
    has_error_body,
    is_complete,
    is_stream,
    judge_cases,
    parse_json,
    statuses_of,
)
from grader.criteria.registry import check
from grader.criteria.verdict import Verdict, toward_bound, within
from grader.records.gateway import CaseRun, GatewayRun
from grader.rubric import Criterion

__all__: list[str] = []  # the checks are found through the registry


# -- the checks --------------------------------------------------------------------------------


def _served_by(route: str) -> Callable[[CaseRun], list[str]]:
    def check(run: CaseRun) -> list[str]:
        answer = run.answers[0] if run.answers else {}
        out = []
        if not is_complete(run, answer):
            out.append(
                f"the client got HTTP {answer.get('status')}"
                + (" without a whole stream ending in [DONE]" if is_stream(run) else "")
                + f", expected a whole answer from the {route} route"
            )
        records = run.api if route == "api" else run.local
        if not any(r.get("status") == 200 for r in records):
            out.append(f"the {route} ledger shows no answered request (statuses: {statuses_of(records)})")
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


@check("gateway", "gateway.fallback-timeout", needs=("connect_margin_s",))
def _timeout(gw: GatewayRun, criterion: Criterion) -> Verdict:
    """A local route whose first byte is later than the config's `first_byte_s` is given up for the API; one
    whose first byte comes within it is waited for; one whose port takes no connection is given up at its
    `connect_s` (the timeouts are the config's, not constants)."""
    limit, connect = gw.plan.first_byte_s, gw.plan.connect_s
    allowed = connect + criterion.tol("connect_margin_s")

    def per_case(run: CaseRun) -> list[str]:
        if run.case.hold_local:
            out = _fallback(run)
            answer = run.answers[0] if run.answers else {}
            arrivals = [float(r["arrival"]) for r in run.api if r.get("arrival") is not None]
            if arrivals and "sent_at" in answer and (waited := min(arrivals) - answer["sent_at"]) > allowed:
                out.append(
                    f"the API route was asked {waited:.2f} s after the request: a connect to the local route that "
                    f"hangs must be given up at connect_s {connect:g} s (allowed {allowed:g} s)"
                )
            return out
        if run.case.stall_s < limit:
            return [
                p + f" (its first byte came after {run.case.stall_s:g} s, within first_byte_s {limit:g} s)"
                for p in _served_by("local")(run)
            ]
        return _fallback(run)

    return judge_cases(
        gw,
        criterion.cases,
        per_case,
        truth=f"the local route's first_byte_s {limit:g} s, connect_s {connect:g} s",
    )


def _no_local(check: Callable[[CaseRun], list[str]]) -> Callable[[CaseRun], list[str]]:
    def wrapped(run: CaseRun) -> list[str]:
        out = check(run)
        if run.local:
            out.append(
                f"the local ledger shows {len(run.local)} attempt(s) (HTTP {statuses_of(run.local)}); "
                "the local route must be skipped without sending"
            )
        return out

    return wrapped


def _passed_through(run: CaseRun) -> list[str]:
    answer = run.answers[0] if run.answers else {}
    fault = run.case.local_faults[0]
    out = []
    if answer.get("status") != fault["status"]:
        out.append(
            f"the client got HTTP {answer.get('status')}, expected the local route's {fault['status']} unchanged"
        )
    body = parse_json(answer.get("body"))
    message = (
        body.get("error", {}).get("message") if isinstance(body, dict) and isinstance(body.get("error"), dict) else None
    )
    if fault.get("message") and message != fault["message"]:
        out.append(f"the body's error.message is {message!r}, expected the local server's {fault['message']!r}")
    if run.api:
        out.append(f"the API ledger shows {len(run.api)} request(s): a 4xx must not fall back")
    return out


@check("gateway", "gateway.committed-stream", needs=("total_margin_s",))
def _after_first_byte(gw: GatewayRun, criterion: Criterion) -> Verdict:
    """After the first byte no retry or fallback: a failure reaches the client as an error event; only the
    config's `total_s` bounds a stream after its first event, so a pause within it is waited for."""
    total = gw.plan.total_s
    allowed = total + criterion.tol("total_margin_s")

    def per_case(run: CaseRun) -> list[str]:
        pause = _mid_stream_pause(run)
        if pause is None:
            return _committed(run)
        if pause < total:
            return [
                p + f" (a {pause:g} s pause after the first event, within total_s {total:g} s)"
                for p in _served_by("local")(run)
            ]
        out = _committed(run)
        answer = run.answers[0] if run.answers else {}
        if "sent_at" in answer and (took := answer["done_at"] - answer["sent_at"]) > allowed:
            out.append(
                f"the client's stream ended {took:.2f} s after the request: past total_s {total:g} s it must end "
                f"(allowed {allowed:g} s)"
            )
        return out

    return judge_cases(gw, criterion.cases, per_case, truth=f"total_s of the local route: {total:g} s")


def _mid_stream_pause(run: CaseRun) -> float | None:
    """How long the local stream pauses after its first event (a `stall` fault), or None when it does not."""
    return next((float(f["seconds"]) for f in run.case.local_faults if f["kind"] == "stall"), None)


def _committed(run: CaseRun) -> list[str]:
    answer = run.answers[0] if run.answers else {}
    events = answer_events(answer)
    text, _ = answer_content(answer)
    out = []
    if answer.get("status") != 200 or not text:
        out.append(
            f"expected HTTP 200 with the content sent before the failure (got HTTP {answer.get('status')}, "
            f"{len(text)} characters of content)"
        )
    if any(d.strip() == "[DONE]" for _, d in events):
        out.append("the client's stream has [DONE]: an unfinished answer must not look complete")
    last = parse_json(events[-1][1]) if events else None
    if not (isinstance(last, dict) and "error" in last):
        out.append('the client\'s stream does not end with an error event (data: {"error": ...})')
    if not run.case.api_faults and run.api:  # the failure is the local stream's: the API is never asked
        out.append(f"the API ledger shows {len(run.api)} request(s): no fallback after the first byte")
    return out


def _refused_with(status: int, *, no_local: bool = False) -> Callable[[CaseRun], list[str]]:
    def check(run: CaseRun) -> list[str]:
        answer = run.answers[0] if run.answers else {}
        out = []
        if answer.get("status") != status or not has_error_body(answer):
            out.append(f"the client got HTTP {answer.get('status')}, expected {status} with an error body")
        if run.api:
            out.append(f"the API ledger shows {len(run.api)} request(s): require: local must never reach the API")
        if no_local and run.local:
            out.append(
                f"the local ledger shows {len(run.local)} attempt(s): the route is known to be down or too "
                "small, so nothing may be sent to it"
            )
        return out

    return check


def _client_error(run: CaseRun) -> bool:
    """The local route's fault is an HTTP 4xx (which is passed through, never a failure to route around)."""
    return any(f["kind"] == "http_error" and 400 <= int(f.get("status", 0)) < 500 for f in run.case.local_faults)


def _require_local_failure(run: CaseRun) -> list[str]:
    if _client_error(run):
        out = _passed_through(run)
        return [p.replace("a 4xx must not fall back", "require: local must never reach the API") for p in out]
    return _refused_with(503)(run)


def _require_bad(run: CaseRun) -> list[str]:
    """A `require` that is neither "local" nor "any" is a 400, sent nowhere; `null` is `any`: served locally."""
    out = []
    refused = [(b, a) for b, a in zip(run.sent, run.answers, strict=False) if b.get("require") is not None]
    for body, answer in refused:
        if answer.get("status") != 400 or not has_error_body(answer):
            out.append(
                f"require: {json.dumps(body.get('require'))} got HTTP {answer.get('status')}, expected 400 "
                "with an OpenAI-style error body"
            )
    served = [a for b, a in zip(run.sent, run.answers, strict=False) if "require" in b and b["require"] is None]
    for answer in served:
        if answer.get("status") != 200:
            out.append(f"require: null got HTTP {answer.get('status')}; null is the default, any: a whole answer")
    if len(run.local) != len(served) or run.api:
        out.append(
            f"the ledgers show {len(run.local)} local and {len(run.api)} API requests; the refused ones must be "
            f"sent nowhere and the {len(served)} with require: null served by the local route"
        )
    return out


def _all_failed(run: CaseRun) -> list[str]:
    """Every route failed: 504 when the last (the API's) failure was a timeout (a stall), else 502."""
    status = 504 if any("stall" in f["kind"] for f in run.case.api_faults) else 502
    answer = run.answers[0] if run.answers else {}
    out = []
    if answer.get("status") != status or not has_error_body(answer):
        out.append(f"the client got HTTP {answer.get('status')}, expected {status} with an error body")
    if answer_header(answer, "x-gateway-route") != "none":
        out.append(f"x-gateway-route is {answer_header(answer, 'x-gateway-route')!r}, expected 'none'")
    if not run.local or not run.api:
        out.append(f"expected one attempt on each route (local ledger {len(run.local)}, API ledger {len(run.api)})")
    return out


def _context(run: CaseRun) -> list[str]:
    """A request that fits (prompt + max_tokens == max_model_len) is served locally; one that does not
    goes to the API without touching the local route; one whose /tokenize answers an error is served locally
    (no pre-check, never the API because of it); one without max_tokens is served locally or refused 400."""
    if run.case.send.max_tokens is None and run.case.send.fit is None:
        return _without_max_tokens(run)
    if run.case.send.fit == "exact" or any(f["kind"] == "tokenize_error" for f in run.case.local_faults):
        return _served_by("local")(run)
    return _no_local(_served_by("api"))(run)


def _without_max_tokens(run: CaseRun) -> list[str]:
    """A body that leaves max_tokens out is a valid chat body, whose prompt fits: the local route serves it, or
    the gateway refuses it 400 itself (sending nothing); an answer of 5xx is a crash, not a rule."""
    answer = run.answers[0] if run.answers else {}
    if answer.get("status") == 400 and has_error_body(answer):
        sent = len(run.local) + len(run.api)
        return [f"the gateway answered 400 and yet sent {sent} request(s) on"] if sent else []
    out = _served_by("local")(run)
    if isinstance(answer.get("status"), int) and answer["status"] >= 500:
        out.insert(0, f"a body without max_tokens got HTTP {answer['status']}: a valid body is never a 5xx")
    return out


@check(
    "gateway", "gateway.health-probe", needs=("margin_s", "probe_low_ratio", "probe_high_ratio", "probe_clear_ratio")
)
def _health(gw: GatewayRun, criterion: Criterion) -> Verdict:
    interval, extra = gw.plan.health_interval_s, criterion.tol("margin_s")
    bound = interval + extra
    margin: float | None = None
    band = (criterion.tol("probe_low_ratio") * interval, criterion.tol("probe_high_ratio") * interval)
    closest: list[tuple[float, str]] = []

    def per_case(run: CaseRun) -> list[str]:
        nonlocal margin
        if run.case.kind == "probe-period":
            problems, off = _probe_period(run, interval, band)
            margin = max(margin or 0.0, off)
            if "probe_median_gap_s" in run.extra:
                gap = run.extra["probe_median_gap_s"]
                closest.append(
                    (off, f"{run.case.name}: the probe's median gap {gap:.3f} s; allowed {band[0]:.3f}-{band[1]:.3f} s")
                )
            return problems
        if run.case.kind != "recover":
            return _no_local(_served_by("api"))(run)
        after = run.extra.get("recovered_after_s")
        this = float("inf") if after is None else within(after, 0.0, abs_s=bound)
        margin = max(margin or 0.0, this)  # several recoveries: the worst one decides
        if after is not None:
            line = f"{run.case.name}: served locally again {after:.3f} s after /health turned healthy"
            closest.append((this, f"{line}; allowed {bound:g} s"))
        if after is None:
            return [
                (
                    f"the local route did not serve again within {run.answers[-1]['done_at'] - run.t0 if run.answers else 0:.2f} s "
                    f"of /health turning healthy ({len(run.answers)} tries; allowed: {bound:g} s)"
                )
            ]
        if after > bound:
            return [f"the local route served again {after:.3f} s after /health turned healthy (allowed: {bound:g} s)"]
        return []

    def clear(run: CaseRun) -> bool:  # a median over many gaps this far outside its band is no machine's noise
        return run.case.kind == "probe-period" and _probe_period(run, interval, band)[1] >= criterion.tol(
            "probe_clear_ratio"
        )

    verdict = judge_cases(
        gw,
        criterion.cases,
        per_case,
        truth=f"recovery bound: health_interval_s {interval:g} s + {extra:g} s",
        clear=clear,
    )
    verdict.margin = margin if margin is not None and margin != float("inf") else None
    verdict.closest = max(closest)[1] if closest else ""
    for rec in (gw.cases[n] for n in criterion.cases if n in gw.cases and gw.cases[n].case.kind == "recover"):
        if "recovered_after_s" in rec.extra:
            verdict.output += (
                f"\nserved locally again {rec.extra['recovered_after_s']:.3f} s after /health turned healthy"
            )
    return verdict


def _probe_period(run: CaseRun, interval: float, band: tuple[float, float]) -> tuple[list[str], float]:
    """The probe's gaps over a quiet window: their median within `band`. The problems, and the median's margin:
    how far it lies from `interval` toward the nearer bound (0 on the interval, 1 on the bound, above 1 outside;
    grader.criteria.verdict.toward_bound)."""
    calls = sorted(float(t) for t in run.extra.get("health_calls", []))
    start, end = run.extra.get("window", [run.t0, run.t0])
    span = f"{len(calls)} calls of /health in {end - start:.2f} s (health_interval_s {interval:g} s)"
    if len(calls) < 3:
        return [f"the probe is too rare: {span}"], float("inf")
    gaps = sorted(b - a for a, b in itertools.pairwise(calls))
    median = gaps[len(gaps) // 2]
    low, high = band
    off = toward_bound(median, interval, low, high)
    run.extra["probe_median_gap_s"] = median
    if median < low:
        return [
            f"the probe is too frequent: a median gap of {median:.3f} s, {span}; allowed {low:.3f}-{high:.3f} s"
        ], off
    if median > high:
        return [f"the probe is too rare: a median gap of {median:.3f} s, {span}; allowed {low:.3f}-{high:.3f} s"], off
    return [], off


def _single(run: CaseRun) -> bool:
    return run.case.kind == "one"


@check("gateway", "gateway.no-route-twice")
def _no_twice(gw: GatewayRun, criterion: Criterion) -> Verdict:
    names = tuple(n for n, r in gw.cases.items() if _single(r))

    def per_case(run: CaseRun) -> list[str]:
        return [
            f"the {route} ledger shows {len(records)} requests for one client request (HTTP {statuses_of(records)})"
            for route, records in (("local", run.local), ("api", run.api))
            if len(records) > 1
        ]

    return judge_cases(
        gw,
        names,
        per_case,
        evidence=(lambda run: bool(run.local or run.api), "a request the gateway sent to either route"),
    )


case_check("gateway.fallback-5xx", _fallback)
case_check("gateway.fallback-refused", _fallback)
case_check("gateway.no-fallback-4xx", _passed_through)
case_check("gateway.require-field", _require_bad)
case_check("gateway.require-local-failure", _require_local_failure)
case_check("gateway.require-local-unhealthy", _refused_with(503, no_local=True))
case_check("gateway.require-local-too-long", _refused_with(400, no_local=True))
case_check("gateway.context-check", _context)
case_check("gateway.all-failed", _all_failed)
