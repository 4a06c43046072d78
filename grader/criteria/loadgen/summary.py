"""The load generator's figures over a run: throughput against the ledger, and the summary and its
percentiles against the candidate's own records (recomputed by nearest rank), in every run.

A defensible difference in clocks never costs a criterion here, while a wrong definition always
does: a sample taken from a failed request, a percentile by interpolation, tokens counted from
chunks.
"""

from __future__ import annotations

from typing import Any

from grader.criteria.loadgen.evidence import fmt, num, run_evidence, unusable
from grader.criteria.loadgen.observed import Observed
from grader.criteria.registry import check
from grader.criteria.truth import nearest_rank
from grader.criteria.verdict import Verdict, within
from grader.rubric import Criterion

__all__: list[str] = []  # the checks are found through the registry


@check("loadgen", "loadgen.throughput", needs=("rel", "cold_lead_s"), by_run=True)
def check_throughput(runs: list[Observed], criterion: Criterion) -> Verdict:
    run = runs[0]
    if (bad := unusable(run)) is not None:
        return bad
    tokens = sum(t.tokens for t in run.truths if t.outcome == "ok")
    if not tokens:
        return Verdict(
            False,
            f"the ledger shows no successful request in `{run.scenario.name}`: there is no throughput to judge",
            evidence=run_evidence(run),
        )
    # The wall time runs from your first send (trusted within cold_lead_s of the first arrival: the first
    # request carries your client's cold start) to the last end the server saw.
    first = min(t.arrival for t in run.truths)
    starts = [s for r in run.requests if isinstance(r, dict) and (s := num(r.get("start"))) is not None]
    began = min(max(min(starts, default=first), first - criterion.tol("cold_lead_s")), first)
    wall = max(t.end for t in run.truths) - began
    truth = tokens / wall if wall > 0 else 0.0
    yours = num(run.summary.get("throughput_tokens_per_s"))
    evidence = run_evidence(
        run,
        reported=f"throughput {fmt(yours)} tokens/s",
        truth=f"{tokens} tokens of successful requests over {wall:.3f} s = {truth:.1f} tokens/s",
    )
    if yours is None:
        return Verdict(False, "summary.throughput_tokens_per_s is missing", evidence=evidence)
    margin = within(yours - truth, truth, rel=criterion.tol("rel"))
    out = f"throughput {yours:.1f} tokens/s; ledger {truth:.1f}; tolerance {criterion.tolerance_text}"
    off = f"{(yours - truth) / truth * 100:+.1f}%" if truth else "n/a"
    closest = f"throughput {off} from the ledger's; allowed {criterion.tol('rel') * 100:g}%"
    return Verdict(margin <= 1, out, margin=margin, evidence=evidence, closest=closest)


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
        value = num(got)
        if expected is None:
            if got is not None:
                problems.append(f"summary.{name}.{key}: {got!r}; with no samples it is null")
        elif value is None or within(value - expected, expected, abs_s=abs_s, rel=criterion.tol("rel")) > 1:
            problems.append(f"summary.{name}.{key}: {got!r}; nearest rank of your {n} records gives {expected:.6g}")
    return problems


def _usable(runs: list[Observed]) -> tuple[list[Observed], str]:
    """The runs with a results file, and a note naming those without one. A run that wrote nothing is charged
    once, to its own scenario's criterion and to loadgen.runs, not again here, where every run is read."""
    lost = [r.scenario.name for r in runs if r.results is None]
    note = f" ({len(lost)} wrote none, charged to loadgen.runs: {', '.join(lost[:6])})" if lost else ""
    return [r for r in runs if r.results is not None], note


def _nothing(usable: list[Observed], note: str) -> list[str]:
    """The failure of a criterion with no run to read: no rule passes on nothing."""
    return [] if usable else [f"no run wrote a results file: there is nothing to judge{note}"]


def _worst(runs: list[Observed], problems: dict[str, list[str]]) -> Observed:
    """The run to show as evidence: the first with a problem, else the first."""
    return next((r for r in runs if problems.get(r.scenario.name)), runs[0])


def _ok_samples(run: Observed, key: str) -> list[float]:
    ok = [r for r in run.requests if isinstance(r, dict) and r.get("outcome") == "ok"]
    return [v for r in ok if (v := num(r.get(key))) is not None]


def _run_percentile_problems(run: Observed, criterion: Criterion) -> list[str]:
    """One run's percentile problems (a run without a results file is charged to loadgen.runs, not here)."""
    if run.results is None:
        return []
    return _percentile_problems("ttft_s", run.summary.get("ttft_s"), _ok_samples(run, "ttft_s"), criterion) + (
        _percentile_problems("tps", run.summary.get("tps"), _ok_samples(run, "tps"), criterion)
    )


@check("loadgen", "loadgen.percentiles", needs=("abs_s", "rel"), by_run=_run_percentile_problems)
def check_percentiles(runs: list[Observed], criterion: Criterion) -> Verdict:
    """In every run, the summary's percentiles are the nearest-rank values of the successful records' own."""
    usable, note = _usable(runs)
    problems = _nothing(usable, note)
    per_run: dict[str, list[str]] = {}
    samples = 0
    for run in usable:
        samples += len(_ok_samples(run, "ttft_s"))
        per_run[run.scenario.name] = _run_percentile_problems(run, criterion)
        problems += [f"{run.scenario.name}: {line}" for line in per_run[run.scenario.name]]
    if usable and not samples and not problems:
        problems.append("no run has a successful request with a TTFT: there are no percentiles to judge")
    shown = _worst(usable or runs, per_run)
    ttfts = _ok_samples(shown, "ttft_s") if shown.results is not None else []
    evidence = run_evidence(
        shown,
        reported=f"ttft_s {shown.summary.get('ttft_s')}; tps {shown.summary.get('tps')}",
        truth=f"nearest rank of your own successful records in `{shown.scenario.name}`: TTFT p50 "
        f"{fmt(nearest_rank(ttfts, 50))}, p90 {fmt(nearest_rank(ttfts, 90))}, "
        f"p99 {fmt(nearest_rank(ttfts, 99))} (n = {len(ttfts)})",
    )
    ok = f"in all {len(usable)} runs with results the percentiles are the nearest-rank values of your successful " + (
        f"records, with n{note}"
    )
    return Verdict(not problems, "\n".join(problems[:12]) or ok, evidence=evidence)


def _summary_problems(run: Observed, criterion: Criterion) -> list[str]:
    records = [r for r in run.requests if isinstance(r, dict)]
    summary, problems = run.summary, []
    counts = {k: sum(1 for r in records if r.get("outcome") == k) for k in ("ok", "empty", "failed")}
    for key, value in {"n": len(records), **counts}.items():
        if summary.get(key) != value:
            problems.append(f"summary.{key}: {summary.get(key)!r}; your records give {value}")
    tokens = sum(r.get("output_tokens") or 0 for r in records if r.get("outcome") == "ok")
    if summary.get("output_tokens") != tokens:
        problems.append(f"summary.output_tokens: {summary.get('output_tokens')!r}; your ok records add up to {tokens}")
    starts = [v for r in records if (v := num(r.get("start"))) is not None]
    ends = [v for r in records if (v := num(r.get("end"))) is not None]
    wall = max(ends) - min(starts) if starts and ends else None
    got_wall, got_tp = num(summary.get("wall_s")), num(summary.get("throughput_tokens_per_s"))
    if (
        wall is None
        or got_wall is None
        or within(got_wall - wall, wall, abs_s=criterion.tol("abs_s"), rel=criterion.tol("rel")) > 1
    ):
        problems.append(
            f"summary.wall_s: {summary.get('wall_s')!r}; first start to last end of your records is {fmt(wall)} s"
        )
    elif got_tp is None or within(got_tp - tokens / got_wall, tokens / got_wall, rel=criterion.tol("rel")) > 1:
        problems.append(
            f"summary.throughput_tokens_per_s: {summary.get('throughput_tokens_per_s')!r}; "
            f"output_tokens / wall_s = {tokens / got_wall:.6g}"
        )
    return problems


def _run_summary_problems(run: Observed, criterion: Criterion) -> list[str]:
    return [] if run.results is None else _summary_problems(run, criterion)


@check("loadgen", "loadgen.summary", needs=("abs_s", "rel"), by_run=_run_summary_problems)
def check_summary(runs: list[Observed], criterion: Criterion) -> Verdict:
    """In every run, the summary agrees with the records: counts, ok tokens only, wall time, throughput."""
    usable, note = _usable(runs)
    problems = _nothing(usable, note)
    per_run = {run.scenario.name: _summary_problems(run, criterion) for run in usable}
    problems += [f"{name}: {line}" for name, lines in per_run.items() for line in lines]
    if usable and not any(run.requests for run in usable) and not problems:
        problems.append("no run has a request record: there is no summary to judge")
    shown = _worst(usable or runs, per_run)
    return Verdict(
        not problems,
        "\n".join(problems[:12])
        or f"in all {len(usable)} runs with results the summary agrees with your records{note}",
        evidence=run_evidence(shown, reported=str(shown.summary)),
    )
