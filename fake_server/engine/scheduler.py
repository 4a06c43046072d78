"""The scheduler of one model, as vLLM's: which sequences run in the next step, and what it did.

Each step it (1) gives every decoding sequence room for its next tokens in the KV cache,
preempting the newest running sequence when the cache is full (recompute: it goes back to the
front of the queue and pays prefill again), (2) continues chunked prefills, and (3) admits waiting
requests in FIFO order while slots, KV blocks and the step's token budget allow. When the step
ends, `grants` moves prefills on and says how many tokens each sequence may generate.

It is pure bookkeeping: no asyncio, no sleeping, no sockets, no ledger and no metrics. Time is a
number the caller passes in, and what happens to a sequence is published as a lifecycle event
(events.py) to whoever the caller wires in.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field

from fake_server.engine.events import Finished, Lifecycle, Preempted, PrefillDone, Queued, Scheduled
from fake_server.engine.kv_cache import BLOCK_SIZE, KVCache
from fake_server.engine.sequence import Sequence, SequenceState
from fake_server.settings import ModelSettings

__all__ = ["UNLIMITED", "Scheduler", "StepPlan", "blocks_for"]

UNLIMITED = 1 << 62  # slots and token budget when the slot limit is ignored

_WAITING, _PREFILL, _DECODE, _DONE = (
    SequenceState.WAITING,
    SequenceState.PREFILL,
    SequenceState.DECODE,
    SequenceState.DONE,
)


def blocks_for(tokens: int) -> int:
    return -(-tokens // BLOCK_SIZE)


@dataclass
class StepPlan:
    """What one step runs: decoding sequences, prefill chunks, and when to look again if nothing."""

    decode: list[Sequence] = field(default_factory=list)
    prefill: list[tuple[Sequence, int]] = field(default_factory=list)
    tokens_per_chunk: int = 1  # as planned: settings may change while the step runs
    starting: int = 0  # sequences admitted this step (each pays prefill_overhead)
    wake_at: float | None = None  # when the head of the queue becomes eligible

    @property
    def empty(self) -> bool:
        return not self.decode and not self.prefill

    @property
    def prefill_tokens(self) -> int:
        return sum(chunk for _, chunk in self.prefill)


class Scheduler:
    """Waiting queue, running batch and KV cache of one model; `publish` hears what happens."""

    def __init__(
        self,
        settings: ModelSettings,
        kv: KVCache,
        publish: Callable[[Lifecycle], None],
        *,
        ignore_slot_limit: bool = False,
    ) -> None:
        self.settings = settings
        self.kv = kv
        self.publish = publish
        self.ignore_slot_limit = ignore_slot_limit
        self.waiting: deque[Sequence] = deque()
        self.running: list[Sequence] = []

    def add(self, seq: Sequence, now: float) -> None:
        """Queue a new request at the back."""
        self.waiting.append(seq)
        self.publish(Queued(seq, now))

    def plan(self, now: float) -> StepPlan:
        """Decide the next step: grow decoders (preempting if needed), continue prefills, admit."""
        s = self.settings
        k = s.tokens_per_chunk
        plan = StepPlan(tokens_per_chunk=k)
        budget = s.max_num_batched_tokens if not self.ignore_slot_limit else UNLIMITED
        slots = s.max_num_seqs if not self.ignore_slot_limit else UNLIMITED
        for seq in list(self.running):
            # never reserve past what the request may still generate (vLLM clamps the same way)
            if seq.state is _DECODE and self._grow(seq, min(k, seq.max_tokens - seq.output)):
                plan.decode.append(seq)
        plan.decode = [q for q in plan.decode if q.state is _DECODE]
        budget -= len(plan.decode) * k
        for seq in self.running:
            if seq.state is _PREFILL and budget > 0:
                chunk = min(budget, self.prefill_target(seq) - seq.computed)
                plan.prefill.append((seq, chunk))
                budget -= chunk
        while self.waiting and len(self.running) < slots and budget > 0:
            seq = self.waiting[0]
            if seq.eligible_at > now:
                plan.wake_at = seq.eligible_at
                break
            target = self.prefill_target(seq)
            cached = self.kv.cached_prefix(seq.hashes, target)
            blocks = self.kv.allocate(cached, blocks_for(target + 1))
            if blocks is None:
                break
            self.waiting.popleft()
            seq.blocks = blocks
            seq.computed = len(cached) * BLOCK_SIZE
            seq.state = _PREFILL
            self.running.append(seq)
            if not seq.admitted_once:
                seq.admitted_once = True
                seq.cached_tokens = seq.computed
                seq.scheduled_mono = now
                self.publish(Scheduled(seq, now, seq.computed))
            chunk = min(budget, target - seq.computed)
            plan.prefill.append((seq, chunk))
            budget -= chunk
            plan.starting += 1
        return plan

    def grants(self, plan: StepPlan, now: float) -> Iterator[tuple[Sequence, int]]:
        """The step has ended: move prefills on, and yield (sequence, tokens it may generate) in
        order. Lazy, so what the caller does with one grant (finish it, say) is seen by the next."""
        for seq, chunk in plan.prefill:
            if seq.state is not _PREFILL:
                continue
            seq.computed += chunk
            if seq.computed >= self.prefill_target(seq):
                seq.state = _DECODE
                self.kv.register(seq.blocks, seq.hashes)
                if not seq.prefilled_once:
                    seq.prefilled_once = True
                    self.publish(PrefillDone(seq, now))
                yield seq, 1
        for seq in plan.decode:
            if seq.state is _DECODE:
                yield seq, plan.tokens_per_chunk

    def advance(self, seq: Sequence, tokens: int) -> None:
        """`tokens` were generated for `seq`: their KV now exists."""
        seq.computed += tokens

    def finish(self, seq: Sequence, reason: str, now: float) -> bool:
        """End `seq` (stop, length, abort or error) and free its slot and blocks; False if it had ended."""
        if seq.state is _DONE:
            return False
        if seq.state is _WAITING:
            try:
                self.waiting.remove(seq)
            except ValueError:
                pass
        if seq in self.running:
            self.running.remove(seq)
        if seq.blocks:
            self.kv.release(seq.blocks)
            seq.blocks = []
        seq.state = _DONE
        seq.finish_reason = reason
        self.publish(Finished(seq, now, reason))
        return True

    def drain(self) -> list[Sequence]:
        """Every sequence not yet ended, waiting ones first; the queue is emptied."""
        doomed = list(self.waiting) + list(self.running)
        self.waiting.clear()
        return doomed

    @staticmethod
    def prefill_target(seq: Sequence) -> int:
        """Tokens whose KV must exist before decoding: the prompt, plus output after a preemption."""
        return seq.num_prompt + seq.output

    def _grow(self, seq: Sequence, k: int) -> bool:
        """Give `seq` room for k more tokens, preempting the newest sequences if the cache is full."""
        need = blocks_for(seq.computed + k) - len(seq.blocks)
        while need > 0:
            block = self.kv.append()
            if block is None:
                victim = self.running[-1]
                self._preempt(victim)
                if victim is seq:
                    return False
                continue
            seq.blocks.append(block)
            need -= 1
        return True

    def _preempt(self, seq: Sequence) -> None:
        self.running.remove(seq)
        self.kv.release(seq.blocks)
        seq.blocks = []
        seq.computed = 0
        seq.state = _WAITING
        seq.eligible_at = 0.0
        self.waiting.appendleft(seq)
        self.publish(Preempted(seq))
