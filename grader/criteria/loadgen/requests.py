"""The load generator's criteria: every figure it reports, against the ledger's truth.

Each check takes the run(s) of its scenario(s) and returns a Verdict. Per-request figures are
compared with the ledger request by request (paired in `matching.py`); summary figures are
recomputed from the candidate's own records (percentiles by nearest rank), so a defensible
difference in clocks never costs a criterion, while a wrong definition always does.
"""

from __future__ import annotations

from typing import Any

from grader.criteria.matching import Pair
from grader.criteria.registry import check
from grader.criteria.truth import Truth, in_flight_series, max_in_flight, nearest_rank
from grader.criteria.verdict import Verdict, within
from grader.grading.outcome import Evidence, Plot
from grader.grading.rubric import Criterion
from grader.runs.loadgen import LoadgenRun

__all__: list[str] = []  # the checks are found through the registry
_COLUMNS = ["#", "id", "outcome (you / ledger)", "failure (you / allowed)", "TTFT s (you / ledger)",
            "tokens (you / ledger)", "TPS (you / ledger)", "paired by"]


def _num(value: Any) -> float | None:
    return float(value) if isinstance(value, int | float) and not isinstance(value, bool) else None


def _fmt(value: Any, digits: int = 4) -> str:
    number = _num(value)
    return "-" if number is None else f"{number:.{digits}g}" if digits else str(value)


def _row(i: int, pair: Pair) -> list[Any]:
    rep, tru = pair.reported or {}, pair.truth
    rid = rep.get("id") or (tru.id if tru else None)
    return [
        rep.get("index", i), (rid or "-")[:18],
        f"{rep.get('outcome', '-')} / {tru.outcome if tru else '-'}",
        f"{rep.get('failure') or '-'} / {','.join(sorted(tru.reasons)) if tru and tru.reasons else '-'}",
        f"{_fmt(rep.get('ttft_s'))} / {_fmt(tru.ttft_s) if tru else '-'}",
        f"{rep.get('output_tokens', '-')} / {tru.tokens if tru else '-'}",
        f"{_fmt(rep.get('tps'))} / {_fmt(tru.tps) if tru else '-'}",
        pair.how,
    ]


def _evidence(run: LoadgenRun, reported: str = "", truth: str = "", plots: list[Plot] | None = None) -> Evidence:
    flags = run.scenario.loadgen
    sent = (f"scenario `{run.scenario.name}`: {run.scenario.description} Load: {flags['requests']} requests at "
            f"concurrency {flags['concurrency']}, ~{flags['prompt_tokens']} prompt tokens, max_tokens {flags['max_tokens']}.")
    return Evidence(sent=sent, reported=reported, truth=truth, columns=list(_COLUMNS),
                    rows=[_row(i, p) for i, p in enumerate(run.pairs)], plots=plots or [], logs=run.logs)


def _unusable(run: LoadgenRun) -> Verdict | None:
    """A fail when there is nothing to compare: no results, or requests that cannot be paired."""
    if run.results is None:
        return Verdict(False, "; ".join(run.problems) or "no results", evidence=_evidence(run))
    unpaired = [p for p in run.pairs if p.how == "unmatched"]
    if unpaired:
        ids = ", ".join(str((p.reported or {}).get("id") or (p.truth.id if p.truth else "?")) for p in unpaired[:4])
        return Verdict(False, f"{len(unpaired)} request(s) could not be paired with the ledger (reported ids "
                              f"that the server never sent, or requests the server saw that you did not report): {ids}",
                       evidence=_evidence(run))
    return None


def _ttft_plot(run: LoadgenRun) -> Plot:
    points = [(p.truth.ttft_s, _num((p.reported or {}).get("ttft_s")))
              for p in run.pairs if p.truth and p.truth.ttft_s is not None]
    return Plot("scatter", "TTFT per request", "ledger TTFT (s)", "your TTFT (s)",
                {"requests": [(x, y) for x, y in points if y is not None]}, diagonal=True)


# `send_lead_s`: a request may be sent this long before the server registers its arrival: on a busy
# 2-core machine both the client and the server wait for a core. A clock started earlier than this
# (before waiting for a concurrency slot, say) is counted as the client's own wait inside TTFT.


def _send_time(rep: dict[str, Any], tru: Truth, lead_s: float) -> float:
    """The candidate's send time, trusted within [arrival - lead_s, arrival]."""
    start = _num(rep.get("start"))
    return tru.arrival if start is None else min(max(start, tru.arrival - lead_s), tru.arrival)


def _ttft_problem(index: Any, rep: dict[str, Any], tru: Truth, criterion: Criterion) -> tuple[float, str | None]:
    """TTFT in two parts, each against the ledger: when the clock started (your `start` against the
    server's arrival) and when it stopped (`start + ttft_s` against the first content chunk's send).
    Returns the worse part's margin and, past the tolerance, what is wrong."""
    start, ttft = _num(rep.get("start")), _num(rep.get("ttft_s"))
    assert tru.first_content is not None and ttft is not None
    if start is None:
        return float("inf"), f"request {index}: no `start` time, so its TTFT cannot be placed on the ledger's clock"
    stopped = start + ttft - tru.first_content
    lead = tru.arrival - start
    stop_margin = within(stopped, 0.0, abs_s=criterion.tol("abs_s"))
    start_margin = lead / criterion.tol("send_lead_s") if lead >= 0 else within(lead, 0.0, abs_s=criterion.tol("abs_s"))
    margin = max(stop_margin, start_margin)
    if stop_margin > 1:
        return margin, (f"request {index}: TTFT {ttft:.4f} s stops {stopped * 1000:+.0f} ms from the first content "
                        f"chunk the server sent (ledger TTFT {tru.ttft_s:.4f} s)")
    if start_margin > 1:
        when = (f"{lead * 1000:.0f} ms before the server saw the request (a wait of your own counted in TTFT?)"
                if lead >= 0 else f"{-lead * 1000:.0f} ms after the server saw the request (the clock started late)")
        return margin, f"request {index}: `start` is {when}"
    return margin, None


@check("loadgen", "loadgen.ttft", "loadgen.role-chunk", needs=("abs_s", "send_lead_s"))
def check_ttft(runs: list[LoadgenRun], criterion: Criterion) -> Verdict:
    problems, worst, compared, outcome_problems = [], 0.0, 0, False
    for run in runs:
        if (bad := _unusable(run)) is not None:
            return bad
        for pair in run.pairs:
            rep, tru = pair.reported or {}, pair.truth
            if tru is None or tru.outcome != "ok":
                continue
            if rep.get("outcome") != "ok" or _num(rep.get("ttft_s")) is None:
                outcome_problems = True
                problems.append(f"request {rep.get('index')}: the ledger shows a full answer, you reported "
                                f"outcome {rep.get('outcome')!r} with TTFT {rep.get('ttft_s')!r}")
                continue
            compared += 1
            margin, problem = _ttft_problem(rep.get("index"), rep, tru, criterion)
            worst = max(worst, margin)
            if problem:
                problems.append(problem)
    if not compared and not problems:
        problems.append("no successful request to compare")
    tol = (f"{criterion.tol('abs_s') * 1000:g} ms for when it stops; `start` at most "
           f"{criterion.tol('send_lead_s') * 1000:g} ms before the server's arrival")
    out = (f"TTFT of {compared} request(s) agrees with the ledger (worst {worst:.2f} of the tolerance: {tol})"
           if not problems else f"{len(problems)} problem(s); tolerance {tol}:\n" + "\n".join(problems[:8]))
    return Verdict(not problems, out, margin=None if outcome_problems else worst,
                   evidence=_evidence(runs[0], plots=[_ttft_plot(r) for r in runs]))


def _outcomes(run: LoadgenRun, criterion: Criterion) -> Verdict:
    """Every request's outcome, failure reason and status as the ledger says they must be."""
    if (bad := _unusable(run)) is not None:
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
                problems.append(f"{where}: failure {rep.get('failure')!r}, should be {' or '.join(sorted(tru.reasons))}")
            if "http_status" in tru.reasons and rep.get("status") != tru.status:
                problems.append(f"{where}: status {rep.get('status')!r}, the server answered {tru.status}")
        if tru.outcome != "ok":
            if rep.get("ttft_s") is not None or rep.get("tps") is not None:
                problems.append(f"{where}: a {tru.outcome} request has no TTFT or TPS sample")
            if rep.get("output_tokens") != 0:
                problems.append(f"{where}: a {tru.outcome} request has 0 output tokens, you reported {rep.get('output_tokens')!r}")
    expected = run.scenario.loadgen["requests"]
    if len(run.pairs) != expected:
        problems.append(f"{len(run.pairs)} requests in the results and ledger together; {expected} were asked for")
    out = "every outcome as the ledger shows" if not problems else "\n".join(problems[:10])
    return Verdict(not problems, out, evidence=_evidence(run))


@check("loadgen", "loadgen.runs")
def check_runs(runs: list[LoadgenRun], criterion: Criterion) -> Verdict:
    run = runs[0]
    problems = list(run.problems)
    if run.results is not None and len(run.requests) != run.scenario.loadgen["requests"]:
        problems.append(f"{len(run.requests)} request records; {run.scenario.loadgen['requests']} requests were asked for")
    if len(run.truths) != run.scenario.loadgen["requests"]:
        problems.append(f"the server saw {len(run.truths)} requests; {run.scenario.loadgen['requests']} were asked for")
    out = "exit 0, a results file that follows the contract, one record per request" if not problems else "\n".join(problems[:10])
    return Verdict(not problems, out, evidence=_evidence(run))


@check("loadgen", "loadgen.reasoning-empty")
def check_reasoning_empty(runs: list[LoadgenRun], criterion: Criterion) -> Verdict:
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
    return Verdict(not problems, "\n".join(problems) or "empty answers are `empty`, with no TTFT and no tokens",
                   evidence=verdict.evidence)


@check("loadgen", "loadgen.multi-token")
def check_multi_token(runs: list[LoadgenRun], criterion: Criterion) -> Verdict:
    run = runs[0]
    if (bad := _unusable(run)) is not None:
        return bad
    problems = []
    for pair in run.pairs:
        rep, tru = pair.reported or {}, pair.truth
        if tru is None or tru.outcome != "ok":
            continue
        if rep.get("output_tokens") != tru.tokens:
            problems.append(f"request {rep.get('index')}: {rep.get('output_tokens')!r} output tokens; usage says {tru.tokens}")
        elif rep.get("tokens_from") != "usage":
            problems.append(f"request {rep.get('index')}: tokens_from {rep.get('tokens_from')!r}; the stream carried usage")
    return Verdict(not problems, "\n".join(problems[:8]) or "output tokens from usage", evidence=_evidence(run))


@check("loadgen", "loadgen.queueing", needs=("abs_s", "send_lead_s"))
def check_queueing(runs: list[LoadgenRun], criterion: Criterion) -> Verdict:
    run = runs[0]
    if (bad := _unusable(run)) is not None:
        return bad
    yours = [v for r in run.requests if isinstance(r, dict) and r.get("outcome") == "ok"
             and (v := _num(r.get("ttft_s"))) is not None]
    # Each request's truth runs from your send time (trusted within send_lead_s of the server's
    # arrival) to the first content chunk the server sent.
    truth = [p.truth.first_content - _send_time(p.reported or {}, p.truth, criterion.tol("send_lead_s")) for p in run.pairs
             if p.truth is not None and p.truth.first_content is not None]
    p_yours, p_truth = nearest_rank(yours, 90), nearest_rank(truth, 90)
    evidence = _evidence(run, reported=f"p90 TTFT {_fmt(p_yours)} s over {len(yours)} requests",
                         truth=f"p90 TTFT {_fmt(p_truth)} s over {len(truth)} requests (sent to first content)",
                         plots=[_ttft_plot(run)])
    if p_yours is None or p_truth is None or len(yours) != len(truth):
        return Verdict(False, f"{len(yours)} successful TTFT samples reported; the ledger has {len(truth)}", evidence=evidence)
    margin = within(p_yours - p_truth, p_truth, abs_s=criterion.tol("abs_s"))
    out = f"p90 TTFT {p_yours:.4f} s; ledger {p_truth:.4f} s; tolerance {criterion.tolerance_text}"
    return Verdict(margin <= 1, out, margin=margin, evidence=evidence)


@check("loadgen", "loadgen.concurrency")
def check_concurrency(runs: list[LoadgenRun], criterion: Criterion) -> Verdict:
    run = runs[0]
    limit = run.scenario.loadgen["concurrency"]
    intervals = [(t.arrival, t.end) for t in run.truths]
    peak = max_in_flight(intervals)
    t0 = min((a for a, _ in intervals), default=0.0)
    plot = Plot("step", "Requests in flight at the server", "seconds since the first arrival", "in flight",
                {"ledger": [(t - t0, float(level)) for t, level in in_flight_series(intervals)],
                 "limit": [(0.0, float(limit)), (max((e for _, e in intervals), default=t0) - t0, float(limit))]})
    evidence = _evidence(run, reported=f"--concurrency {limit}", truth=f"at most {peak} in flight", plots=[plot])
    if len(run.truths) != run.scenario.loadgen["requests"]:
        return Verdict(False, f"the server saw {len(run.truths)} requests; {run.scenario.loadgen['requests']} were asked for",
                       evidence=evidence)
    if peak == limit:
        return Verdict(True, f"{peak} in flight at the busiest moment, as asked", evidence=evidence)
    why = "more than the limit" if peak > limit else "the limit was never reached"
    return Verdict(False, f"{peak} in flight at the busiest moment with --concurrency {limit}: {why}", evidence=evidence)


@check("loadgen", "loadgen.tps", needs=("rel",))
def check_tps(runs: list[LoadgenRun], criterion: Criterion) -> Verdict:
    run = runs[0]
    if (bad := _unusable(run)) is not None:
        return bad
    problems, worst, points = [], 0.0, []
    for pair in run.pairs:
        rep, tru = pair.reported or {}, pair.truth
        if tru is None or tru.tps is None:
            continue
        tps = _num(rep.get("tps"))
        if tps is None:
            problems.append(f"request {rep.get('index')}: no TPS; the ledger shows {tru.tps:.1f} tokens/s")
            continue
        points.append((tru.tps, tps))
        margin = within(tps - tru.tps, tru.tps, rel=criterion.tol("rel"))
        worst = max(worst, margin)
        if margin > 1:
            problems.append(f"request {rep.get('index')}: TPS {tps:.1f}, ledger {tru.tps:.1f}")
    plot = Plot("scatter", "Per-request TPS", "ledger TPS (tokens/s)", "your TPS (tokens/s)", {"requests": points}, diagonal=True)
    evidence = _evidence(run, plots=[plot])
    if not points and not problems:
        problems.append("no successful request with two content chunks to compare")
    out = (f"TPS of {len(points)} request(s) within {criterion.tolerance_text} of the ledger" if not problems
           else f"tolerance {criterion.tolerance_text}:\n" + "\n".join(problems[:8]))
    return Verdict(not problems, out, margin=worst if points else None, evidence=evidence)


@check("loadgen", "loadgen.throughput", needs=("rel",))
def check_throughput(runs: list[LoadgenRun], criterion: Criterion) -> Verdict:
    run = runs[0]
    if (bad := _unusable(run)) is not None:
        return bad
    tokens = sum(t.tokens for t in run.truths if t.outcome == "ok")
    wall = max(t.end for t in run.truths) - min(t.arrival for t in run.truths)
    truth = tokens / wall if wall > 0 else 0.0
    yours = _num(run.summary.get("throughput_tokens_per_s"))
    evidence = _evidence(run, reported=f"throughput {_fmt(yours)} tokens/s",
                         truth=f"{tokens} tokens of successful requests over {wall:.3f} s = {truth:.1f} tokens/s")
    if yours is None:
        return Verdict(False, "summary.throughput_tokens_per_s is missing", evidence=evidence)
    margin = within(yours - truth, truth, rel=criterion.tol("rel"))
    out = f"throughput {yours:.1f} tokens/s; ledger {truth:.1f}; tolerance {criterion.tolerance_text}"
    return Verdict(margin <= 1, out, margin=margin, evidence=evidence)


def _percentile_problems(name: str, reported: Any, values: list[float], criterion: Criterion) -> list[str]:
    if not isinstance(reported, dict):
        return [f"summary.{name}: missing"]
    problems = []
    n = len(values)
    if reported.get("n") != n:
        problems.append(f"summary.{name}.n: {reported.get('n')!r}; your records have {n} samples")
    if reported.get("p99_is_max") is not (n < 100):
        problems.append(f"summary.{name}.p99_is_max: {reported.get('p99_is_max')!r} with n = {n}; it must be {n < 100}")
    abs_s = criterion.tol("abs_s") if name == "ttft_s" else None  # seconds apply to TTFT; TPS is relative only
    for key, p in (("p50", 50), ("p90", 90), ("p99", 99), ("max", 100)):
        expected, got = nearest_rank(values, p), reported.get(key)
        value = _num(got)
        if expected is None:
            if got is not None:
                problems.append(f"summary.{name}.{key}: {got!r}; with no samples it is null")
        elif value is None or within(value - expected, expected, abs_s=abs_s, rel=criterion.tol("rel")) > 1:
            problems.append(f"summary.{name}.{key}: {got!r}; nearest rank of your {n} records gives {expected:.6g}")
    return problems


@check("loadgen", "loadgen.percentiles", needs=("abs_s", "rel"))
def check_percentiles(runs: list[LoadgenRun], criterion: Criterion) -> Verdict:
    run = runs[0]
    if run.results is None:
        return Verdict(False, "; ".join(run.problems), evidence=_evidence(run))
    ok = [r for r in run.requests if isinstance(r, dict) and r.get("outcome") == "ok"]
    ttfts = [v for r in ok if (v := _num(r.get("ttft_s"))) is not None]
    tpss = [v for r in ok if (v := _num(r.get("tps"))) is not None]
    problems = (_percentile_problems("ttft_s", run.summary.get("ttft_s"), ttfts, criterion)
                + _percentile_problems("tps", run.summary.get("tps"), tpss, criterion))
    evidence = _evidence(run, reported=f"ttft_s {run.summary.get('ttft_s')}; tps {run.summary.get('tps')}",
                         truth=f"nearest rank of your own records: TTFT p50 {_fmt(nearest_rank(ttfts, 50))}, "
                               f"p90 {_fmt(nearest_rank(ttfts, 90))}, p99 {_fmt(nearest_rank(ttfts, 99))} (n = {len(ttfts)})")
    return Verdict(not problems, "\n".join(problems) or "percentiles are the nearest-rank values of your records, with n",
                   evidence=evidence)


@check("loadgen", "loadgen.summary", needs=("abs_s", "rel"))
def check_summary(runs: list[LoadgenRun], criterion: Criterion) -> Verdict:
    run = runs[0]
    if run.results is None:
        return Verdict(False, "; ".join(run.problems), evidence=_evidence(run))
    records = [r for r in run.requests if isinstance(r, dict)]
    summary, problems = run.summary, []
    counts = {k: sum(1 for r in records if r.get("outcome") == k) for k in ("ok", "empty", "failed")}
    for key, value in {"n": len(records), **counts}.items():
        if summary.get(key) != value:
            problems.append(f"summary.{key}: {summary.get(key)!r}; your records give {value}")
    tokens = sum(r.get("output_tokens") or 0 for r in records if r.get("outcome") == "ok")
    if summary.get("output_tokens") != tokens:
        problems.append(f"summary.output_tokens: {summary.get('output_tokens')!r}; your ok records add up to {tokens}")
    starts = [v for r in records if (v := _num(r.get("start"))) is not None]
    ends = [v for r in records if (v := _num(r.get("end"))) is not None]
    wall = max(ends) - min(starts) if starts and ends else None
    got_wall, got_tp = _num(summary.get("wall_s")), _num(summary.get("throughput_tokens_per_s"))
    if wall is None or got_wall is None or within(got_wall - wall, wall, abs_s=criterion.tol("abs_s"),
                                                  rel=criterion.tol("rel")) > 1:
        problems.append(f"summary.wall_s: {summary.get('wall_s')!r}; first start to last end of your records is {_fmt(wall)} s")
    elif got_tp is None or within(got_tp - tokens / got_wall, tokens / got_wall, rel=criterion.tol("rel")) > 1:
        problems.append(f"summary.throughput_tokens_per_s: {summary.get('throughput_tokens_per_s')!r}; "
                        f"output_tokens / wall_s = {tokens / got_wall:.6g}")
    return Verdict(not problems, "\n".join(problems) or "the summary agrees with your records",
                   evidence=_evidence(run, reported=str(summary)))


@check("loadgen", "loadgen.cut", "loadgen.no-done", "loadgen.stream-error", "loadgen.malformed",
       "loadgen.http-errors")
def check_failures(runs: list[LoadgenRun], criterion: Criterion) -> Verdict:
    return _outcomes(runs[0], criterion)


@check("loadgen", "loadgen.sse-framing", needs=("abs_s", "send_lead_s"))
def check_sse_framing(runs: list[LoadgenRun], criterion: Criterion) -> Verdict:
    verdicts = [(run, _outcomes(run, criterion)) for run in runs]
    bad = [f"{run.scenario.name}: {v.output}" for run, v in verdicts if not v.passed]
    tokens = [check_multi_token([run], criterion) for run in runs]
    bad += [f"{run.scenario.name}: {v.output}" for run, v in zip(runs, tokens) if not v.passed and v.output not in " ".join(bad)]
    if bad:
        return Verdict(False, "\n".join(bad[:8]), evidence=verdicts[0][1].evidence)
    ttft = check_ttft(runs, criterion)
    ttft.output = "every framing parsed; " + ttft.output
    return ttft

