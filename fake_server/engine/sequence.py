"""One request inside an engine, and the hand-off point between the engine and its writer.

`Event` is what a response writer reads, one per chunk it may send. It is made once per token at
up to 1,000 tokens a second per stream, so it is a NamedTuple (a tuple with names), nothing heavier.

The engine appends events; the response writer takes them with `next_events()`. A waiting writer
is woken with a future, so handing over a token costs one callback, not a queue per request.
"""

from __future__ import annotations

import asyncio
import enum
import time
from typing import Any, Literal, NamedTuple

from fake_server.engine.faults import FaultRule
from fake_server.engine.ledger import LedgerRecord
from fake_server.engine.textgen import TextStream

__all__ = ["Event", "EventKind", "Sequence", "SequenceState", "usage_of"]

# "role", "reasoning" or "content"; "fault" where the sequence's fault acts (the writer applies it
# there); "error" (text: the message) when the engine failed.
EventKind = Literal["role", "reasoning", "content", "fault", "error"]


class Event(NamedTuple):
    """One hand-over to the response writer; a finish_reason marks the sequence's last event."""

    kind: EventKind
    text: str
    tokens: int
    finish_reason: str | None = None
    stop_reason: str | None = None


class SequenceState(enum.Enum):
    """Where a sequence is in the scheduler: queued, prefilling, decoding, or ended."""

    WAITING = 0
    PREFILL = 1
    DECODE = 2
    DONE = 3


class Sequence:
    """One request inside the engine, and the hand-off point to its response writer."""

    __slots__ = (
        "_waiter",
        "admitted_once",
        "arrival_mono",
        "blocks",
        "cached_tokens",
        "carried",
        "computed",
        "eligible_at",
        "error",
        "events",
        "fault",
        "fault_fired",
        "finish_reason",
        "first_token_mono",
        "hashes",
        "held",
        "last_token_mono",
        "max_tokens",
        "natural_len",
        "num_prompt",
        "output",
        "prefilled_once",
        "prompt_ids",
        "reasoning_len",
        "reasoning_out",
        "record",
        "role_on_schedule",
        "scheduled_mono",
        "state",
        "stop",
        "stop_reason",
        "text",
    )

    def __init__(
        self,
        record: LedgerRecord,
        prompt_ids: list[int],
        text: TextStream,
        *,
        max_tokens: int,
        natural_len: int | None,
        reasoning_len: int,
        stop: tuple[str, ...],
        eligible_at: float,
        role_on_schedule: bool,
    ) -> None:
        self.record = record
        self.prompt_ids = prompt_ids
        self.hashes: list[int] = []
        self.num_prompt = len(prompt_ids)
        self.max_tokens = max_tokens
        self.natural_len = natural_len
        self.reasoning_len = reasoning_len
        self.text = text
        self.stop = stop
        self.eligible_at = eligible_at
        self.role_on_schedule = role_on_schedule
        self.computed = 0
        self.output = 0
        self.reasoning_out = 0
        self.blocks: list[int] = []
        self.state = SequenceState.WAITING
        self.events: list[Event] = []
        self.finish_reason: str | None = None
        self.stop_reason: str | None = None
        self.cached_tokens = 0
        self._waiter: asyncio.Future[None] | None = None
        self.arrival_mono = time.perf_counter()
        self.scheduled_mono: float | None = None
        self.first_token_mono: float | None = None
        self.last_token_mono: float | None = None
        self.held = ""  # content held back while it may be the start of a stop string
        self.carried = 0  # tokens generated but not yet handed over (all their text held back)
        self.admitted_once = False
        self.prefilled_once = False  # its prompt's KV has existed once (later prefills are recomputes)
        self.fault: FaultRule | None = None  # a fault the engine applies at a generated token
        self.fault_fired = False
        self.error: str | None = None  # why the engine ended it with an error

    @property
    def done(self) -> bool:
        return self.state is SequenceState.DONE

    @property
    def content_tokens(self) -> int:
        return self.output - self.reasoning_out

    def push(self, event: Event) -> None:
        self.events.append(event)
        self.wake()

    def wake(self) -> None:
        waiter = self._waiter
        if waiter is not None:
            self._waiter = None
            if not waiter.done():
                waiter.set_result(None)

    async def next_events(self) -> list[Event]:
        """Wait for and take the events produced since the last call; [] once the sequence is done."""
        while not self.events and self.state is not SequenceState.DONE:
            self._waiter = asyncio.get_running_loop().create_future()
            await self._waiter
        events, self.events = self.events, []
        return events


def usage_of(seq: Sequence, prompt_details: bool = True) -> dict[str, Any]:
    """OpenAI usage for a sequence, with vLLM's details fields (prompt details as with
    `--enable-prompt-tokens-details`; reasoning tokens for a reasoning model)."""
    usage: dict[str, Any] = {
        "prompt_tokens": seq.num_prompt,
        "total_tokens": seq.num_prompt + seq.output,
        "completion_tokens": seq.output,
    }
    if prompt_details:
        usage["prompt_tokens_details"] = {"cached_tokens": seq.cached_tokens}
    if seq.reasoning_len:
        usage["completion_tokens_details"] = {"reasoning_tokens": seq.reasoning_out}
    return usage
