"""Was the machine too busy for a timing check to be trusted?

The fake servers share the cores with the candidate's code and the grader. Every ledger record
carries `step_lag_max`, how far its engine's steps ran behind their own timeline. A step later
than the rubric's busy lag (`judging.loadgen_busy_lag_s`, `gateway.busy_lag_s`) means the server itself could not keep time then, and a client on the same cores
will have been late by as much: its error is the machine's as much as its own. The verdict then
uses the wider borderline band (the rubric's `judging.busy_borderline`), so such an answer is rerun, and
`inconclusive` if the machine stays busy, rather than a wrong pass or fail.

A server asleep between its tokens keeps time while the candidate's client, busy parsing, waits for a core
behind other work; so each run also keeps the share of its time in which some task waited for a core
(grader/running/cpu_wait.py). Above the rubric's `judging.cpu_waiting` the machine was oversubscribed for that
run, and a timing check read from it is judged as on a busy machine.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

__all__ = ["busy_from_cpu", "busy_from_ledgers"]


def busy_from_ledgers(ledgers: Iterable[list[dict[str, Any]]], *, limit_s: float) -> str | None:
    """Why the machine was too busy during these ledgers' requests, or None when it kept time: a
    step later than `limit_s` (a check with a looser tolerance passes its own)."""
    worst = max((float(r.get("step_lag_max") or 0.0) for ledger in ledgers for r in ledger), default=0.0)
    if worst <= limit_s:
        return None
    return (
        f"the fake server's own steps ran up to {worst * 1000:.0f} ms late (more than {limit_s * 1000:.0f} ms): "
        "the machine was too busy to keep time"
    )


def busy_from_cpu(shares: Iterable[float | None], *, limit: float) -> str | None:
    """Why the machine was too busy during these runs, or None: a run for more than `limit` of whose time some
    task waited for a core."""
    worst = max((share for share in shares if share is not None), default=None)
    if worst is None or worst <= limit:
        return None
    return (
        f"some process waited for a core {worst * 100:.0f}% of a run's time (more than {limit * 100:.0f}%): the "
        "machine was too busy to keep time"
    )
