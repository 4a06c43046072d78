"""The ledger's view of engine activity: lifecycle events become a record's fields.

This is the only code that writes `LedgerRecord` fields from what the engine did (the response
writers stamp what they did on the wire: headers, chunks, errors, the end). Wall-clock times are
taken here, when the event arrives; admissions of one step share one reading, as they happen at
one moment.
"""

from __future__ import annotations

import time

from fake_server.engine.events import Finished, Lifecycle, Preempted, PrefillDone, Queued, Scheduled, Tokens

__all__ = ["LedgerRecorder"]


class LedgerRecorder:
    """Writes each lifecycle event into the ledger record of its sequence."""

    __slots__ = ("_step", "_wall")

    def __init__(self) -> None:
        self._step: float | None = None  # the step clock reading `_wall` was taken for
        self._wall = 0.0

    def on_event(self, event: Lifecycle) -> None:
        rec = event.seq.record
        if isinstance(event, Tokens):
            rec.step_lag_max = max(rec.step_lag_max, event.lag)
        elif isinstance(event, Queued):
            rec.queued = time.time()
        elif isinstance(event, Scheduled):
            if event.now != self._step:
                self._step, self._wall = event.now, time.time()
            rec.scheduled = rec.prefill_start = self._wall
            rec.cached_tokens = event.cached_tokens
        elif isinstance(event, PrefillDone):
            rec.prefill_end = time.time()
        elif isinstance(event, Preempted):
            rec.preemptions += 1
        elif isinstance(event, Finished):
            seq = event.seq
            rec.prompt_tokens = seq.num_prompt
            rec.completion_tokens = seq.output
            rec.reasoning_tokens = seq.reasoning_out
            rec.content_tokens = seq.content_tokens
            rec.finish_reason = event.reason
