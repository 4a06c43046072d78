"""What every load-generator check shows and reads: the per-request table, the TTFT plot, and the run
that cannot be judged at all (no results, or requests that cannot be paired with the ledger)."""

from __future__ import annotations

from typing import Any

from grader.criteria.loadgen.observed import Observed
from grader.criteria.matching import Pair
from grader.criteria.verdict import LATE_EXIT_MARGIN, Verdict
from grader.outcome import Evidence, Plot

__all__ = ["fmt", "num", "run_evidence", "ttft_plot", "unusable"]

_COLUMNS = [
    "#",
    "id",
    "outcome (you / ledger)",
    "failure (you / allowed)",
    "TTFT s (you / ledger)",
    "tokens (you / ledger)",
    "TPS (you / ledger)",
    "paired by",
]


def num(value: Any) -> float | None:
    return float(value) if isinstance(value, int | float) and not isinstance(value, bool) else None


def fmt(value: Any, digits: int = 4) -> str:
    number = num(value)
    return "-" if number is None else f"{number:.{digits}g}" if digits else str(value)


def _row(i: int, pair: Pair) -> list[Any]:
    rep, tru = pair.reported or {}, pair.truth
    rid = rep.get("id") or (tru.id if tru else None)
    return [
        rep.get("index", i),
        (rid or "-")[:18],
        f"{rep.get('outcome', '-')} / {tru.outcome if tru else '-'}",
        f"{rep.get('failure') or '-'} / {','.join(sorted(tru.reasons)) if tru and tru.reasons else '-'}",
        f"{fmt(rep.get('ttft_s'))} / {fmt(tru.ttft_s) if tru else '-'}",
        f"{rep.get('output_tokens', '-')} / {tru.tokens if tru else '-'}",
        f"{fmt(rep.get('tps'))} / {fmt(tru.tps) if tru else '-'}",
        pair.how,
    ]


def run_evidence(run: Observed, reported: str = "", truth: str = "", plots: list[Plot] | None = None) -> Evidence:
    flags = run.scenario.loadgen
    sent = (
        f"scenario `{run.scenario.name}`: {run.scenario.description} Load: {flags['requests']} requests at "
        f"concurrency {flags['concurrency']}, ~{flags['prompt_tokens']} prompt tokens, max_tokens {flags['max_tokens']}."
    )
    return Evidence(
        sent=sent,
        reported=reported,
        truth=truth,
        columns=list(_COLUMNS),
        rows=[_row(i, p) for i, p in enumerate(run.pairs)],
        plots=plots or [],
        logs=run.logs,
    )


def unusable(run: Observed) -> Verdict | None:
    """A fail when there is nothing to compare: a command that hung or was not run, no results, or requests
    that cannot be paired."""
    if run.stopped or run.results is None:
        margin = LATE_EXIT_MARGIN if run.late_exit else None
        return Verdict(False, "; ".join(run.problems) or "no results", evidence=run_evidence(run), margin=margin)
    unpaired = [p for p in run.pairs if p.how == "unmatched"]
    if unpaired:
        ids = ", ".join(str((p.reported or {}).get("id") or (p.truth.id if p.truth else "?")) for p in unpaired[:4])
        return Verdict(
            False,
            f"{len(unpaired)} request(s) could not be paired with the ledger (reported ids "
            f"that the server never sent, or requests the server saw that you did not report): {ids}",
            evidence=run_evidence(run),
        )
    return None


def ttft_plot(run: Observed) -> Plot:
    points = [
        (p.truth.ttft_s, num((p.reported or {}).get("ttft_s")))
        for p in run.pairs
        if p.truth and p.truth.ttft_s is not None
    ]
    return Plot(
        "scatter",
        "TTFT per request",
        "ledger TTFT (s)",
        "your TTFT (s)",
        {"requests": [(x, y) for x, y in points if y is not None]},
        diagonal=True,
    )
