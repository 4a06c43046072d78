"""How the gateway's answer reaches the client: streamed as the route sends it, with headers and a model
that say truly who served it, whole and unmixed beside other streams, from a gateway that started.

Each check reads the cases its rubric entry names (or every case of a kind) from one `GatewayRun` and
compares what the grader's client got with what the ledgers say the route sent.
"""

from __future__ import annotations

from grader.criteria.gateway.answers import (
    answer_content,
    answer_events,
    answer_header,
    answer_route,
    case_check,
    is_complete,
    is_stream,
    judge_cases,
    parse_json,
)
from grader.criteria.gateway.stats import stats_errors
from grader.criteria.registry import check
from grader.criteria.verdict import Verdict, within
from grader.records.gateway import CaseRun, GatewayRun
from grader.rubric import Criterion

__all__: list[str] = []  # the checks are found through the registry


@check("gateway", "gateway.streaming", needs=("abs_s",))
def _streaming(gw: GatewayRun, criterion: Criterion) -> Verdict:
    worst, closest = 0.0, ""
    lines: list[str] = []
    allowed = criterion.tol("abs_s")

    def per_case(run: CaseRun) -> list[str]:
        nonlocal worst, closest
        answer = run.answers[0] if run.answers else {}
        route = "api" if run.case.local_faults else "local"  # a local fault sends the stream to the API
        records = [r for r in (run.local if route == "local" else run.api) if r.get("status") == 200]
        if not is_complete(run, answer) or not records:
            return [
                (
                    f"expected a whole stream from the {route} route (HTTP {answer.get('status')}, "
                    f"{len(records)} answered ledger records)"
                )
            ]
        sent = [c[0] for c in records[-1].get("chunks") or [] if c[1] == "content" and c[2]]
        _, first = answer_content(answer)
        if not sent or first is None:
            return ["no content to compare"]
        delay = first - sent[0]
        span = sent[-1] - sent[0]
        if (margin := within(delay, 0.0, abs_s=allowed)) >= worst:
            worst = margin
            closest = (
                f"{run.case.name}: first content {delay * 1000:.0f} ms after the {route} server sent it; allowed "
                f"{allowed * 1000:g} ms"
            )
        lines.append(
            f"{run.case.name}: first content {delay * 1000:.0f} ms after the {route} server sent it "
            f"(its stream took {span:.2f} s)"
        )
        if delay > allowed:
            return [
                (
                    f"the first content reached the client {delay:.3f} s after the server sent it (allowed "
                    f"{allowed:g} s): the stream was held back"
                )
            ]
        return []

    verdict = judge_cases(gw, criterion.cases, per_case)
    verdict.margin, verdict.closest = worst, closest
    verdict.output += ("\n" + "\n".join(lines)) if lines else ""
    return verdict


def _headers_true(run: CaseRun, models: dict[str, str]) -> list[str]:
    out = []
    for i, answer in enumerate(run.answers):
        expected_route = answer_route(run, answer)
        route = answer_header(answer, "x-gateway-route")
        attempts = answer_header(answer, "x-gateway-attempts")
        tried = [name for name, records in (("local", run.local), ("api", run.api)) if records]
        if run.case.kind == "recover":  # polls under require: local: only the one that was served reached local
            tried = ["local"] if answer.get("status") == 200 else []
        allowed = {",".join(tried)}
        if run.local_stopped:
            allowed |= {",".join(["local", *tried])}
        if route != expected_route:
            out.append(f"x-gateway-route is {route!r}; the ledgers show {expected_route!r}")
        if (attempts or "") not in allowed:
            out.append(
                f"x-gateway-attempts is {attempts!r}; the ledgers show {' or '.join(repr(a) for a in sorted(allowed))}"
            )
        if answer.get("status") == 200 and expected_route in models:
            model = models[expected_route]
            if is_stream(run, i):
                seen = {
                    c.get("model")
                    for c in (parse_json(d) for _, d in answer_events(answer))
                    if isinstance(c, dict) and "model" in c
                }
            else:
                body = parse_json(answer.get("body"))
                seen = {body.get("model")} if isinstance(body, dict) else {None}
            if seen != {model}:
                out.append(
                    f"the answer names model {sorted(map(str, seen))}; the {expected_route} route's model is {model!r}"
                )
        if run.case.kind not in ("one", "recover"):
            break
    return out


@check("gateway", "gateway.headers")
def _headers(gw: GatewayRun, criterion: Criterion) -> Verdict:
    names = tuple(n for n, r in gw.cases.items() if r.case.kind in ("one", "recover"))
    models = {"local": gw.plan.local_model, "api": gw.plan.api_model}
    return judge_cases(
        gw,
        names,
        lambda run: _headers_true(run, models),
        evidence=(
            lambda run: any(a.get("status") == 200 and (run.local or run.api) for a in run.answers),
            "an answer a route served",
        ),
    )


def _concurrency(run: CaseRun) -> list[str]:
    direct = run.extra.get("direct") or []
    out = []
    whole = sum(is_complete(run, a, i) for i, a in enumerate(run.answers))
    if whole != len(run.sent):
        out.append(f"{whole} of {len(run.sent)} streams arrived whole (200 and [DONE])")
    mixed = 0
    for answer, alone in zip(run.answers, direct, strict=False):
        text, _ = answer_content(answer)
        expected, _ = answer_content(alone)
        if not expected or text != expected:
            mixed += 1
    if mixed:
        out.append(
            f"{mixed} stream(s) differ from the text the local server sends for the same request alone "
            "(missing, reordered or mixed content)"
        )
    if len(run.local) != len(run.sent) or run.api:
        out.append(
            f"the ledgers show {len(run.local)} local and {len(run.api)} API requests for {len(run.sent)} streams"
        )
    return out


def _starts(run: CaseRun) -> list[str]:
    out = []
    health = run.answers[0] if run.answers else {}
    if health.get("status") != 200:
        out.append(f"GET /health answered {health.get('status')}, expected 200")
    stats = run.stats_after
    errors = stats_errors(stats)
    if errors:
        out.append(f"GET /stats does not follow gateway-stats.schema.json: {'; '.join(errors[:3])}")
    return out


case_check("gateway.starts", _starts)
case_check("gateway.concurrency", _concurrency)
