"""Lifecycle events: what the scheduler and the engine report about a sequence.

Queued, scheduled, prefill done, tokens, preempted, finished. The ledger recorder and the metrics
consume them, so nothing else writes ledger fields or counters from engine activity. (What a
response writer reads is `sequence.Event`.) They are named tuples: immutable, and `Tokens` is made
for every sequence at every step, where a frozen dataclass would cost twice as much.
"""

from __future__ import annotations

from typing import NamedTuple

from fake_server.engine.sequence import Sequence

__all__ = [
    "Finished",
    "Lifecycle",
    "Preempted",
    "PrefillDone",
    "Queued",
    "Scheduled",
    "Tokens",
]


class Queued(NamedTuple):
    """The request entered the waiting queue."""

    seq: Sequence
    now: float


class Scheduled(NamedTuple):
    """First admission to a slot (a readmission after preemption is not reported again)."""

    seq: Sequence
    now: float  # the step's clock reading: every admission of one step shares it
    cached_tokens: int


class PrefillDone(NamedTuple):
    """The prompt's KV exists for the first time; the first token comes at the end of this step."""

    seq: Sequence
    now: float


class Tokens(NamedTuple):
    """`generated` tokens were made for `seq` at the end of a step that ended `lag` seconds late."""

    seq: Sequence
    now: float
    lag: float
    generated: int


class Preempted(NamedTuple):
    """Evicted by recompute: freed, requeued at the front, it pays prefill again."""

    seq: Sequence


class Finished(NamedTuple):
    """The sequence ended (stop, length, abort or error) and gave back its slot and KV blocks."""

    seq: Sequence
    now: float
    reason: str


Lifecycle = Queued | Scheduled | PrefillDone | Tokens | Preempted | Finished
