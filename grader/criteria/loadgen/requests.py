"""The load generator's per-request checks: every request it reports, against the ledger's truth.

Each check takes the run(s) of its scenario(s) and returns a Verdict. Per-request figures are
compared with the ledger request by request (paired in `matching.py`): TTFT in two parts, outcomes
and failure reasons, output tokens from usage, TPS, the concurrency the server saw.
"""

from __future__ import annotations

from typing import Any

from grader.criteria.loadgen.evidence import fmt, num, run_evidence, ttft_plot, unusable
from grader.criteria.loadgen.observed import Observed
from grader.criteria.registry import check
from grader.criteria.truth import Truth, in_flight_series, max_in_flight, nearest_rank
from grader.criteria.verdict import LATE_EXIT_MARGIN, Verdict, within
from grader.outcome import Plot
from grader.rubric import Criterion

__all__: list[str] = []  # the checks are found through the registry


# `send_lead_s`: a request may be sent this long before the server registers its arrival: on a busy
# 2-core machine both the client and the server wait for a core. A clock started earlier than this
# (before waiting for a concurrency slot, say) is counted as the client's own wait inside TTFT. The
# first wave (the first `concurrency` requests the server sees) may lead by `cold_lead_s`: no slot
# wait can touch it, and it carries the client's cold start (its imports, its first connections),
# which a slow or busy machine stretches past `send_lead_s` for a correct client.


def lead_allowed(run: Observed, tru: Truth, criterion: Criterion) -> float:
    """How long before the server saw this request the client's `start` may be (see above)."""
    wave = min(int(run.scenario.loadgen["concurrency"]), int(run.scenario.loadgen["requests"]))
    return criterion.tol("cold_lead_s") if tru.number <= wave else criterion.tol("send_lead_s")


def _send_time(rep: dict[str, Any], tru: Truth, lead_s: float) -> float:
    """The candidate's send time, trusted within [arrival - lead_s, arrival]."""
    start = num(rep.get("start"))
    return tru.arrival if start is None else min(max(start, tru.arrival - lead_s), tru.arrival)


def _ttft_problem(
    index: Any, rep: dict[str, Any], tru: Truth, criterion: Criterion, lead_s: float
) -> tuple[float, str | None, str]:
    """TTFT in two parts, each against the ledger: when the clock started (your `start` against the
    server's arrival, at most `lead_s` before it) and when it stopped (`start + ttft_s` against the first
    content chunk's send). Returns the worse part's margin, what is wrong past the tolerance, and the worse
    part in one line with its limit (for the closest call, pass or fail)."""
    start, ttft = num(rep.get("start")), num(rep.get("ttft_s"))
    assert tru.first_content is not None and ttft is not None
    if start is None:
        why = f"request {index}: no `start` time, so its TTFT cannot be placed on the ledger's clock"
        return float("inf"), why, why
    stopped = start + ttft - tru.first_content
    lead = tru.arrival - start
    stop_margin = within(stopped, 0.0, abs_s=criterion.tol("abs_s"))
    start_margin = lead / lead_s if lead >= 0 else within(lead, 0.0, abs_s=criterion.tol("abs_s"))
    margin = max(stop_margin, start_margin)
    stop_line = (
        f"request {index}: TTFT {ttft:.4f} s stops {stopped * 1000:+.0f} ms from the first content chunk the "
        f"server sent (ledger TTFT {tru.ttft_s:.4f} s); allowed {criterion.tol('abs_s') * 1000:g} ms"
    )
    when = (
        f"{lead * 1000:.0f} ms before the server saw the request"
        if lead >= 0
        else f"{-lead * 1000:.0f} ms after the server saw the request (the clock started late)"
    )
    allowed = f"{lead_s * 1000:.0f}" if lead >= 0 else f"{criterion.tol('abs_s') * 1000:g}"
    start_line = f"request {index}: `start` is {when}; allowed {allowed} ms"
    detail = stop_line if stop_margin >= start_margin else start_line
    if stop_margin > 1:
        return margin, stop_line, detail
    if start_margin > 1:
        return margin, start_line + (" (a wait of your own counted in TTFT?)" if lead >= 0 else ""), detail
    return margin, None, detail


@check("loadgen", "loadgen.ttft", "loadgen.role-chunk", needs=("abs_s", "send_lead_s", "cold_lead_s"))
def check_ttft(runs: list[Observed], criterion: Criterion) -> Verdict:
    problems, worst, compared, outcome_problems, closest = [], 0.0, 0, False, ""
    margins: list[float] = []  # each request's, so one request read late alone is borderline (lone_outlier)
    for run in runs:
        if (bad := unusable(run)) is not None:
            return bad
        for pair in run.pairs:
            rep, tru = pair.reported or {}, pair.truth
            if tru is None or tru.outcome != "ok":
                continue
            if rep.get("outcome") != "ok" or num(rep.get("ttft_s")) is None:
                outcome_problems = True
                problems.append(
                    f"request {rep.get('index')}: the ledger shows a full answer, you reported "
                    f"outcome {rep.get('outcome')!r} with TTFT {rep.get('ttft_s')!r}"
                )
                continue
            compared += 1
            margin, problem, detail = _ttft_problem(
                rep.get("index"), rep, tru, criterion, lead_allowed(run, tru, criterion)
            )
            margins.append(margin)
            if margin >= worst:
                worst, closest = margin, (f"{run.scenario.name} " if len(runs) > 1 else "") + detail
            if problem:
                problems.append(problem)
    if not compared and not problems:
        problems.append("no successful request to compare")
    tol = (
        f"{criterion.tol('abs_s') * 1000:g} ms for when it stops; `start` at most "
        f"{criterion.tol('send_lead_s') * 1000:g} ms before the server's arrival "
        f"({criterion.tol('cold_lead_s') * 1000:g} ms in the first wave)"
    )
    out = (
        f"TTFT of {compared} request(s) agrees with the ledger (worst {worst:.2f} of the tolerance: {tol})"
        if not problems
        else f"{len(problems)} problem(s); tolerance {tol}:\n" + "\n".join(problems[:8])
    )
    return Verdict(
        not problems,
        out,
        margin=None if outcome_problems else worst,
        evidence=run_evidence(runs[0], plots=[ttft_plot(r) for r in runs]),
        closest=closest,
        margins=() if outcome_problems else tuple(margins),
    )


def _outcomes(run: Observed, criterion: Criterion) -> Verdict:
    """Every request's outcome, failure reason and status as the ledger says they must be."""
    if (bad := unusable(run)) is not None:
        return bad
    problems = []
    for pair in run.pairs:
        rep, tru = pair.reported or {}, pair.truth
        assert tru is not None
        where = f"request {rep.get('index')} ({tru.fault or 'no fault'})"
        if rep.get("outcome") != tru.outcome:
            problems.append(f"{where}: outcome {rep.get('outcome')!r}, should be {tru.outcome!r}")
        elif tru.outcome == "failed":
            if rep.get("failure") not in tru.reasons:
                problems.append(
                    f"{where}: failure {rep.get('failure')!r}, should be {' or '.join(sorted(tru.reasons))}"
                )
            if "http_status" in tru.reasons and rep.get("status") != tru.status:
                problems.append(f"{where}: status {rep.get('status')!r}, the server answered {tru.status}")
        if tru.outcome != "ok":
            if rep.get("ttft_s") is not None or rep.get("tps") is not None:
                problems.append(f"{where}: a {tru.outcome} request has no TTFT or TPS sample")
            if rep.get("output_tokens") != 0:
                problems.append(
                    f"{where}: a {tru.outcome} request has 0 output tokens, you reported {rep.get('output_tokens')!r}"
                )
    expected = run.scenario.loadgen["requests"]
    if len(run.pairs) != expected:
        problems.append(f"{len(run.pairs)} requests in the results and ledger together; {expected} were asked for")
    out = "every outcome as the ledger shows" if not problems else "\n".join(problems[:10])
    return Verdict(not problems, out, evidence=run_evidence(run))


@check("loadgen", "loadgen.runs", by_run=True)
def check_runs(runs: list[Observed], criterion: Criterion) -> Verdict:
    run = runs[0]
    problems = list(run.problems)
    if run.results is not None and len(run.requests) != run.scenario.loadgen["requests"]:
        problems.append(
            f"{len(run.requests)} request records; {run.scenario.loadgen['requests']} requests were asked for"
        )
    if len(run.truths) != run.scenario.loadgen["requests"]:
        problems.append(f"the server saw {len(run.truths)} requests; {run.scenario.loadgen['requests']} were asked for")
    out = (
        "exit 0, a results file that follows the contract, one record per request"
        if not problems
        else "\n".join(problems[:10])
    )
    margin = LATE_EXIT_MARGIN if run.late_exit else None
    return Verdict(not problems, out, evidence=run_evidence(run), margin=margin)


@check("loadgen", "loadgen.reasoning-empty")
def check_reasoning_empty(runs: list[Observed], criterion: Criterion) -> Verdict:
    run = runs[0]
    verdict = _outcomes(run, criterion)
    if run.results is None:
        return verdict
    summary, n = run.summary, len(run.truths)
    ttft_raw = summary.get("ttft_s")
    ttft: dict[str, Any] = ttft_raw if isinstance(ttft_raw, dict) else {}
    problems = [] if verdict.passed else [verdict.output]
    if summary.get("empty") != n or summary.get("ok") != 0:
        problems.append(f"summary: empty {summary.get('empty')!r} and ok {summary.get('ok')!r}; should be {n} and 0")
    if ttft.get("n") != 0 or any(ttft.get(k) is not None for k in ("p50", "p90", "p99", "max")):
        problems.append(f"summary.ttft_s: no TTFT sample exists, so n is 0 and every percentile null; got {ttft}")
    if summary.get("output_tokens") != 0:
        problems.append(f"summary.output_tokens: {summary.get('output_tokens')!r}; empty answers have none")
    return Verdict(
        not problems,
        "\n".join(problems) or "empty answers are `empty`, with no TTFT and no tokens",
        evidence=verdict.evidence,
    )


@check("loadgen", "loadgen.multi-token")
def check_multi_token(runs: list[Observed], criterion: Criterion) -> Verdict:
    """Output tokens from usage where the server sends it, several tokens a chunk; from a server that sends
    none, one per non-empty content delta (every run the criterion names)."""
    for run in runs:
        if (bad := unusable(run)) is not None:
            return bad
    problems = [f"{run.scenario.name}: {p}" if len(runs) > 1 else p for run in runs for p in _token_problems(run)[:8]]
    said = "output tokens from usage" + (", and from content deltas without it" if len(runs) > 1 else "")
    return Verdict(not problems, "\n".join(problems[:8]) or said, evidence=run_evidence(runs[0]))


def _token_problems(run: Observed) -> list[str]:
    """Each successful request's output tokens against usage (completion minus reasoning tokens), or against its
    non-empty content deltas from a server that sends no usage; none to compare is a problem too."""
    problems, compared = [], 0
    for pair in run.pairs:
        rep, tru = pair.reported or {}, pair.truth
        if tru is None or tru.outcome != "ok":
            continue
        compared += 1
        source = "usage" if tru.usage else "content_deltas"
        if rep.get("output_tokens") != tru.tokens:
            problems.append(
                f"request {rep.get('index')}: {rep.get('output_tokens')!r} output tokens; "
                + (
                    f"usage says {tru.tokens}"
                    + (" (completion minus reasoning tokens)" if tru.reasoning_tokens else "")
                    if tru.usage
                    else f"the stream carried no usage and {tru.tokens} non-empty content deltas"
                )
            )
        elif rep.get("tokens_from") != source:
            problems.append(
                f"request {rep.get('index')}: tokens_from {rep.get('tokens_from')!r}; "
                + ("the stream carried usage" if tru.usage else "the stream carried no usage: content_deltas")
            )
    if not compared:
        problems.append(
            f"the ledger shows no successful request in `{run.scenario.name}`: there are no output tokens to compare"
        )
    return problems


@check("loadgen", "loadgen.reasoning-content", needs=("abs_s", "send_lead_s", "cold_lead_s"))
def check_reasoning_content(runs: list[Observed], criterion: Criterion) -> Verdict:
    """A model that reasons, then answers: TTFT stops at the first content, and tokens leave reasoning out."""
    run = runs[0]
    if (bad := unusable(run)) is not None:
        return bad
    ttft = check_ttft(runs, criterion)
    tokens = _token_problems(run)
    if tokens:
        ttft.passed, ttft.margin = False, None  # a wrong count is a fail however the timing came out
        ttft.output = "\n".join(tokens[:6] + ([ttft.output] if ttft.output else []))
    else:
        ttft.output = "output tokens leave the reasoning out; " + ttft.output
    return ttft


@check("loadgen", "loadgen.queueing", needs=("abs_s", "send_lead_s", "cold_lead_s"))
def check_queueing(runs: list[Observed], criterion: Criterion) -> Verdict:
    run = runs[0]
    if (bad := unusable(run)) is not None:
        return bad
    yours = [
        v
        for r in run.requests
        if isinstance(r, dict) and r.get("outcome") == "ok" and (v := num(r.get("ttft_s"))) is not None
    ]
    # Each request's truth runs from your send time (trusted as far as lead_allowed says) to the first
    # content chunk the server sent.
    truth = [
        p.truth.first_content - _send_time(p.reported or {}, p.truth, lead_allowed(run, p.truth, criterion))
        for p in run.pairs
        if p.truth is not None and p.truth.first_content is not None
    ]
    p_yours, p_truth = nearest_rank(yours, 90), nearest_rank(truth, 90)
    evidence = run_evidence(
        run,
        reported=f"p90 TTFT {fmt(p_yours)} s over {len(yours)} requests",
        truth=f"p90 TTFT {fmt(p_truth)} s over {len(truth)} requests (sent to first content)",
        plots=[ttft_plot(run)],
    )
    if p_yours is None or p_truth is None or len(yours) != len(truth):
        return Verdict(
            False, f"{len(yours)} successful TTFT samples reported; the ledger has {len(truth)}", evidence=evidence
        )
    margin = within(p_yours - p_truth, p_truth, abs_s=criterion.tol("abs_s"))
    out = f"p90 TTFT {p_yours:.4f} s; ledger {p_truth:.4f} s; tolerance {criterion.tolerance_text}"
    closest = (
        f"p90 TTFT {(p_yours - p_truth) * 1000:+.0f} ms from the ledger's; allowed {criterion.tol('abs_s') * 1000:g} ms"
    )
    return Verdict(margin <= 1, out, margin=margin, evidence=evidence, closest=closest)


@check("loadgen", "loadgen.concurrency", by_run=True)
def check_concurrency(runs: list[Observed], criterion: Criterion) -> Verdict:
    run = runs[0]
    if run.stopped:
        return Verdict(False, run.problems[0], evidence=run_evidence(run))
    limit = run.scenario.loadgen["concurrency"]
    intervals = [(t.arrival, t.end) for t in run.truths]
    peak = max_in_flight(intervals)
    t0 = min((a for a, _ in intervals), default=0.0)
    plot = Plot(
        "step",
        "Requests in flight at the server",
        "seconds since the first arrival",
        "in flight",
        {
            "ledger": [(t - t0, float(level)) for t, level in in_flight_series(intervals)],
            "limit": [(0.0, float(limit)), (max((e for _, e in intervals), default=t0) - t0, float(limit))],
        },
    )
    evidence = run_evidence(run, reported=f"--concurrency {limit}", truth=f"at most {peak} in flight", plots=[plot])
    if len(run.truths) != run.scenario.loadgen["requests"]:
        return Verdict(
            False,
            f"the server saw {len(run.truths)} requests; {run.scenario.loadgen['requests']} were asked for",
            evidence=evidence,
        )
    if peak == limit:
        return Verdict(True, f"{peak} in flight at the busiest moment, as asked", evidence=evidence)
    why = "more than the limit" if peak > limit else "the limit was never reached"
    return Verdict(
        False, f"{peak} in flight at the busiest moment with --concurrency {limit}: {why}", evidence=evidence
    )


def tps_margin(tps: float, truth: float, tokens: int, criterion: Criterion) -> float:
    """A reported TPS's margin against the ledger's: within `rel` of it, or with a span (first to last content delta,
    tokens / TPS) within `span_s` of the ledger's, whichever is nearer. A stream of a few milliseconds (2,000
    tokens/s in chunks of 8) is timed no finer than a loopback's jitter: a correct client reads it 17% off."""
    by_rate = within(tps - truth, truth, rel=criterion.tol("rel"))
    span_s = criterion.tolerance.get("span_s")
    if not span_s or tps <= 0 or truth <= 0 or tokens <= 0:
        return by_rate
    return min(by_rate, within(tokens / tps - tokens / truth, 0.0, abs_s=span_s))


@check("loadgen", "loadgen.tps", needs=("rel", "span_s"))
def check_tps(runs: list[Observed], criterion: Criterion) -> Verdict:
    run = runs[0]
    if (bad := unusable(run)) is not None:
        return bad
    problems, points, margins, missing, closest, nulls = [], [], [], 0, (-1.0, ""), 0
    for pair in run.pairs:
        rep, tru = pair.reported or {}, pair.truth
        if tru is not None and tru.outcome == "ok" and tru.tps is None:  # fewer than two content deltas: null
            if (reported := num(rep.get("tps"))) is not None:
                problems.append(
                    f"request {rep.get('index')}: TPS {reported:g}, yet it had fewer than two content deltas"
                )
            nulls += 1
            continue
        if tru is None or tru.tps is None:
            continue
        tps = num(rep.get("tps"))
        if tps is None:
            problems.append(f"request {rep.get('index')}: no TPS; the ledger shows {tru.tps:.1f} tokens/s")
            missing += 1
            continue
        points.append((tru.tps, tps))
        margin = tps_margin(tps, tru.tps, tru.tokens, criterion)
        margins.append(margin)
        if margin > closest[0]:
            off = (tps - tru.tps) / tru.tps * 100
            line = f"request {rep.get('index')}: TPS {off:+.1f}% from the ledger's"
            closest = (margin, f"{line}; allowed {criterion.tolerance_text}")
        if margin > 1:
            problems.append(f"request {rep.get('index')}: TPS {tps:.1f}, ledger {tru.tps:.1f}")
    plot = Plot(
        "scatter",
        "Per-request TPS",
        "ledger TPS (tokens/s)",
        "your TPS (tokens/s)",
        {"requests": points},
        diagonal=True,
    )
    evidence = run_evidence(run, plots=[plot])
    if not points and not nulls and not problems:
        problems.append("no successful request to compare")
    judged = f"TPS of {len(points)} request(s) within {criterion.tolerance_text} of the ledger"
    if nulls:
        judged += f"; null for the {nulls} with fewer than two content deltas, as the brief defines it"
    out = judged if not problems else f"tolerance {criterion.tolerance_text}:\n" + "\n".join(problems[:8])
    return Verdict(
        not problems,
        out,
        margin=max(margins) if points else None,
        evidence=evidence,
        margins=() if missing else tuple(margins),  # a request with no TPS is not a timing question
        closest=closest[1],
    )


@check(
    "loadgen",
    "loadgen.cut",
    "loadgen.no-done",
    "loadgen.stream-error",
    "loadgen.malformed",
    "loadgen.http-errors",
    "loadgen.timeout",
)
def check_failures(runs: list[Observed], criterion: Criterion) -> Verdict:
    return _outcomes(runs[0], criterion)


@check("loadgen", "loadgen.sse-framing", needs=("abs_s", "send_lead_s", "cold_lead_s"))
def check_sse_framing(runs: list[Observed], criterion: Criterion) -> Verdict:
    verdicts = [(run, _outcomes(run, criterion)) for run in runs]
    bad = [f"{run.scenario.name}: {v.output}" for run, v in verdicts if not v.passed]
    tokens = [check_multi_token([run], criterion) for run in runs]
    bad += [
        f"{run.scenario.name}: {v.output}"
        for run, v in zip(runs, tokens)
        if not v.passed and v.output not in " ".join(bad)
    ]
    if bad:
        return Verdict(False, "\n".join(bad[:8]), evidence=verdicts[0][1].evidence)
    ttft = check_ttft(runs, criterion)
    ttft.output = "every framing parsed; " + ttft.output
    return ttft
