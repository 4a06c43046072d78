"""The table printed on stdout: every percentile beside its n, a p99 from fewer than 100 samples
called the maximum it is, and aggregate throughput never worded as one user's speed."""

from __future__ import annotations

from collections import Counter

from .percentiles import Percentiles
from .results import RunResult

__all__ = ["render"]


def render(run: RunResult, output: str | None = None) -> str:
    config, summary = run.config, run.summary()
    lines = [
        f"Load test: {config.requests} streamed chat completions to {config.chat_url} (model {config.model}),",
        f"  at most {config.concurrency} in flight, prompts of ~{config.prompt_tokens} tokens, "
        f"max_tokens {config.max_tokens}",
        "",
        f"Outcomes (n={summary.n}): {summary.counts['ok']} ok, {summary.counts['empty']} empty, "
        f"{summary.counts['failed']} failed",
    ]
    lines += _failure_lines(run)
    if summary.counts["empty"]:
        lines.append(f"  empty: {summary.counts['empty']} completed with no content (e.g. reasoning used all of "
                     "max_tokens); no TTFT sample, 0 output tokens")
    lines += ["", *_table(summary.ttft, summary.tps, summary.slot_wait)]
    if summary.ttft.p99_is_max or summary.tps.p99_is_max:
        lines.append("  (max) = fewer than 100 samples, so the p99 is the slowest one, not a 99th percentile")
    lines.append("  TTFT: request sent -> first non-empty content delta, ok requests only "
                 "(role, reasoning and usage chunks do not count)")
    lines.append("  TPS: one request's output tokens over its first-to-last content token time (a per-user speed)")
    lines.append("  slot wait: run start -> the request held a concurrency slot; the load generator's own queue, "
                 "never in TTFT")
    sources = Counter(r.tokens_from for r in run.requests if r.outcome == "ok")
    source_text = ", ".join(f"{k} for {v}" for k, v in sorted(sources.items()))
    lines += [
        "",
        f"Output tokens, ok requests only: {summary.output_tokens} "
        + (f"(counted from {source_text})" if sources else "(no ok requests)"),
        f"Wall time, first request sent to last one ended: {summary.wall_s:.3f} s",
        f"Aggregate throughput: {summary.throughput:.1f} output tokens/s across all {config.concurrency} "
        "concurrent streams (the server's total, not one user's speed)",
    ]
    if output:
        lines += ["", f"Results written to {output}"]
    return "\n".join(lines)


def _failure_lines(run: RunResult) -> list[str]:
    failed = [r for r in run.requests if r.outcome == "failed"]
    by_reason = Counter((r.failure, r.status) for r in failed)
    out = []
    for (reason, status), count in sorted(by_reason.items(), key=lambda kv: (-kv[1], str(kv[0]))):
        sample = next(r.message for r in failed if (r.failure, r.status) == (reason, status))
        label = f"{reason} {status}" if reason == "http_status" else reason
        out.append(f"  failed, {label}: {count}  e.g. {sample}")
    return out


def _table(ttft: Percentiles, tps: Percentiles, slot_wait: Percentiles) -> list[str]:
    rows = [("TTFT (s)", ttft, "{:.4f}"), ("TPS per request (tok/s)", tps, "{:.1f}"),
            ("slot wait (s)", slot_wait, "{:.4f}")]
    header = f"  {'metric':<24} {'n':>5} {'p50':>10} {'p90':>10} {'p99':>16} {'max':>10}"
    out = [header, "  " + "-" * (len(header) - 2)]
    for name, p, fmt in rows:
        p50, p90, p99, top = (_cell(v, fmt) for v in (p.p50, p.p90, p.p99, p.max))
        if p.p99_is_max and p.n:
            p99 += " (max)"
        out.append(f"  {name:<24} {p.n:>5} {p50:>10} {p90:>10} {p99:>16} {top:>10}")
    return out


def _cell(value: float | None, fmt: str) -> str:
    return "-" if value is None else fmt.format(value)
