"""One model's engine: a step loop over a fixed number of slots, as vLLM's scheduler works.

Each step the scheduler (1) gives every decoding sequence room for its next tokens in the KV
cache, preempting the newest running sequence when the cache is full (recompute: it goes back to
the front of the queue and pays prefill again), (2) continues chunked prefills, and (3) admits
waiting requests in FIFO order while slots, KV blocks and the step's token budget allow. The step
then lasts

    decode:  (1 / token_rate) * (1 + batch_slowdown * (decoding sequences - 1))   if any decode
  + prefill: prefill_overhead per sequence starting prefill + prefill tokens / prefill_rate

scaled by seeded jitter. At its end every sequence that finished prefill emits its first token and
every decoding sequence emits `tokens_per_chunk` tokens. Steps are laid end to end on a fixed
timeline; when the process cannot keep up, the lateness is recorded (`step_lag`) and the timeline
restarts from now rather than silently compressing later steps.
"""

from __future__ import annotations

import asyncio
import logging
import random
import time
from collections import deque
from dataclasses import dataclass, field

from .clock import StepClock, clock_for
from .faults import FaultRule
from .kv_cache import BLOCK_SIZE, KVCache, block_hashes
from .ledger import LedgerRecord
from .metrics import EngineMetrics
from .sequence import Event, EventKind, Sequence, SequenceState
from .settings import ModelSettings, SettingsError
from .textgen import TextStream

__all__ = ["Engine", "EngineFailed", "InjectedCrash", "QueueFull", "check_capacity"]

_log = logging.getLogger("fake_server")


class QueueFull(Exception):
    """The waiting queue is at its configured cap (only when `max_waiting` > 0)."""


class EngineFailed(Exception):
    """The engine's step loop crashed; it takes no requests until the server is reset."""


class InjectedCrash(RuntimeError):
    """Raised inside a step by an `engine_crash` fault, to exercise the supervisor."""


def _blocks_for(tokens: int) -> int:
    return -(-tokens // BLOCK_SIZE)


@dataclass
class _Plan:
    decode: list[Sequence] = field(default_factory=list)
    prefill: list[tuple[Sequence, int]] = field(default_factory=list)
    tokens_per_chunk: int = 1  # as planned: settings may change while the step runs
    duration: float = 0.0
    wake_at: float | None = None

    @property
    def empty(self) -> bool:
        return not self.decode and not self.prefill


class Engine:
    """Runs the step loop of one model; everything it touches lives on one event loop."""

    def __init__(self, name: str, settings: ModelSettings, seed: int, *, ignore_slot_limit: bool = False) -> None:
        self.name = name
        self.settings = settings
        self.seed = seed
        # The grader's switch (FAKE_SERVER_IGNORE_SLOT_LIMIT): no slot, token-budget or KV limit
        # on admission, so nothing ever queues; the settings themselves are left as set.
        self.ignore_slot_limit = ignore_slot_limit
        self.metrics = EngineMetrics()
        self.kv = self._new_kv(settings)
        self.waiting: deque[Sequence] = deque()
        self.running: list[Sequence] = []
        self._rng = random.Random(seed)
        self._wakeup: asyncio.Event | None = None
        self._task: asyncio.Task[None] | None = None
        self._clock: StepClock = clock_for(settings.timing)
        self.failure: str | None = None  # why the step loop died, once it has
        check_capacity(settings)

    # -- lifecycle ------------------------------------------------------------------------
    def start(self) -> None:
        self.failure = None
        self._wakeup = asyncio.Event()
        self._task = asyncio.get_running_loop().create_task(self._supervise(), name=f"engine:{self.name}")

    @property
    def failed(self) -> bool:
        return self.failure is not None

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            try:
                await self._task
            except asyncio.CancelledError:
                pass
            self._task = None
        for seq in list(self.waiting) + list(self.running):
            self._finish(seq, "abort")

    def check_reconfigure(self, settings: ModelSettings) -> None:
        """Raise SettingsError if `settings` cannot be applied now (nothing is changed)."""
        check_capacity(settings)
        busy = self.num_running + self.num_waiting
        if self._kv_changes(settings) and busy:
            raise SettingsError(f"cannot resize the KV cache of `{self.name}` while {busy} requests are in flight")

    def _new_kv(self, settings: ModelSettings) -> KVCache:
        return KVCache(settings.kv_cache_tokens, settings.enable_prefix_caching, unbounded=self.ignore_slot_limit)

    def _kv_changes(self, settings: ModelSettings) -> bool:
        return (
            settings.kv_cache_tokens != self.settings.kv_cache_tokens
            or settings.enable_prefix_caching != self.settings.enable_prefix_caching
        )

    def reconfigure(self, settings: ModelSettings) -> None:
        """Apply new settings; the KV cache can only be rebuilt while nothing is in flight."""
        self.check_reconfigure(settings)
        if self._kv_changes(settings):
            self.kv = self._new_kv(settings)
        if settings.timing != self.settings.timing:
            self._clock = clock_for(settings.timing)
        self.settings = settings
        self._poke()

    def reset(self) -> None:
        self.metrics = EngineMetrics()
        self.kv.reset_prefix_cache()
        self._rng = random.Random(self.seed)

    @property
    def num_running(self) -> int:
        return len(self.running)

    @property
    def num_waiting(self) -> int:
        return len(self.waiting)

    # -- requests -------------------------------------------------------------------------
    def submit(
        self,
        record: LedgerRecord,
        prompt_ids: list[int],
        text: TextStream,
        *,
        max_tokens: int,
        stop: tuple[str, ...] = (),
        min_tokens: int = 0,
        ignore_eos: bool = False,
        reasoning: bool = False,
        role_on_schedule: bool = False,
        arrival: float | None = None,
        fault: FaultRule | None = None,
    ) -> Sequence:
        """Queue a request. `fault`, if it acts at a generated token, is applied by this engine."""
        s = self.settings
        if self.failure is not None:
            raise EngineFailed(
                f"The engine of model `{self.name}` has failed ({self.failure}); reset the server to restart it."
            )
        if s.max_waiting and len(self.waiting) >= s.max_waiting:
            raise QueueFull(f"the waiting queue of `{self.name}` is full ({s.max_waiting} requests)")
        natural = None if ignore_eos else max(min_tokens, text.natural_length(s.output_len_min, s.output_len_max))
        now = time.perf_counter()
        seq = Sequence(
            record,
            prompt_ids,
            text,
            max_tokens=max_tokens,
            natural_len=natural,
            reasoning_len=s.reasoning_tokens if reasoning else 0,
            stop=stop,
            eligible_at=now + s.queue_delay,
            role_on_schedule=role_on_schedule,
        )
        seq.arrival_mono = now if arrival is None else arrival
        if fault is not None and fault.at_token:
            seq.fault = fault
        if self.kv.prefix_caching:
            seq.hashes = block_hashes(prompt_ids)
        record.queued = time.time()
        self.waiting.append(seq)
        self._poke()
        return seq

    def abort(self, seq: Sequence, reason: str = "abort") -> None:
        """The client went away (or an injected engine error, reason "error"): free the slot and the KV blocks now."""
        if seq.state is SequenceState.DONE:
            return
        if seq.state is SequenceState.WAITING:
            try:
                self.waiting.remove(seq)
            except ValueError:
                pass
        self._finish(seq, reason)

    def _poke(self) -> None:
        if self._wakeup is not None:
            self._wakeup.set()

    # -- the step loop --------------------------------------------------------------------
    async def _supervise(self) -> None:
        """Run the step loop; if a step raises, fail every request of this engine and stop."""
        try:
            await self._run()
        except asyncio.CancelledError:
            raise
        except Exception as exc:  # noqa: BLE001 - any bug in a step must end the requests, not hang them
            self._fail(exc)

    def _fail(self, exc: Exception) -> None:
        self.failure = f"{type(exc).__name__}: {exc}"
        _log.error(
            "the engine of model `%s` crashed; its %d requests end with an error",
            self.name,
            self.num_running + self.num_waiting,
            exc_info=exc,
        )
        message = f"The engine failed while generating this response ({self.failure})."
        doomed = list(self.waiting) + list(self.running)
        self.waiting.clear()
        for seq in doomed:
            seq.error = message
            seq.push(Event("error", message, 0, "error", None))
            self._finish(seq, "error")

    async def _run(self) -> None:
        assert self._wakeup is not None
        timeline: float | None = None  # planned end of the previous step
        while True:
            now = time.perf_counter()
            plan = self._plan(now)
            if plan.empty:
                timeline = None
                self._wakeup.clear()
                timeout = None if plan.wake_at is None else max(0.0, plan.wake_at - now)
                try:
                    await asyncio.wait_for(self._wakeup.wait(), timeout)
                except TimeoutError:
                    pass
                continue
            start = now if timeline is None else timeline
            end = start + plan.duration
            clock = self._clock
            await clock.sleep_until(end)  # always yields: the writers send the last step's tokens
            lag = max(0.0, time.perf_counter() - end)
            self.metrics.step_lag.observe(lag)
            timeline = end if lag <= clock.reanchor else None
            self._complete(plan, lag)

    def _plan(self, now: float) -> _Plan:
        s = self.settings
        k = s.tokens_per_chunk
        plan = _Plan(tokens_per_chunk=k)
        budget = s.max_num_batched_tokens if not self.ignore_slot_limit else 1 << 62
        slots = s.max_num_seqs if not self.ignore_slot_limit else 1 << 62
        for seq in list(self.running):
            # never reserve past what the request may still generate (vLLM clamps the same way)
            if seq.state is SequenceState.DECODE and self._grow(seq, min(k, seq.max_tokens - seq.output)):
                plan.decode.append(seq)
        plan.decode = [q for q in plan.decode if q.state is SequenceState.DECODE]
        budget -= len(plan.decode) * k
        starting = 0
        for seq in self.running:
            if seq.state is SequenceState.PREFILL and budget > 0:
                chunk = min(budget, self._prefill_target(seq) - seq.computed)
                plan.prefill.append((seq, chunk))
                budget -= chunk
        wall = None
        while self.waiting and len(self.running) < slots and budget > 0:
            seq = self.waiting[0]
            if seq.eligible_at > now:
                plan.wake_at = seq.eligible_at
                break
            target = self._prefill_target(seq)
            cached = self.kv.cached_prefix(seq.hashes, target)
            blocks = self.kv.allocate(cached, _blocks_for(target + 1))
            if blocks is None:
                break
            self.waiting.popleft()
            wall = wall or time.time()
            seq.blocks = blocks
            seq.computed = len(cached) * BLOCK_SIZE
            seq.state = SequenceState.PREFILL
            self.running.append(seq)
            if not seq.admitted_once:
                seq.admitted_once = True
                seq.cached_tokens = seq.computed
                seq.scheduled_mono = now
                seq.record.scheduled = wall
                seq.record.prefill_start = wall
                seq.record.cached_tokens = seq.computed
                self.metrics.prefix_queries += seq.num_prompt
                self.metrics.prefix_hits += seq.computed
                self.metrics.queue_time.observe(now - seq.arrival_mono)
                if seq.role_on_schedule:
                    seq.push(Event("role", "", 0, None, None))
            chunk = min(budget, target - seq.computed)
            plan.prefill.append((seq, chunk))
            budget -= chunk
            starting += 1
        if plan.empty:
            return plan
        duration = 0.0
        if plan.decode:
            duration += (1.0 / s.token_rate) * (1.0 + s.batch_slowdown * (len(plan.decode) - 1))
        prefill_tokens = sum(chunk for _, chunk in plan.prefill)
        duration += prefill_tokens / s.prefill_rate + s.prefill_overhead * starting
        if s.jitter:
            duration *= 1.0 + self._rng.uniform(-s.jitter, s.jitter)
        plan.duration = duration
        return plan

    def _prefill_target(self, seq: Sequence) -> int:
        """Tokens whose KV must exist before decoding: the prompt, plus output after a preemption."""
        return seq.num_prompt + seq.output

    def _grow(self, seq: Sequence, k: int) -> bool:
        """Give `seq` room for k more tokens, preempting the newest sequences if the cache is full."""
        need = _blocks_for(seq.computed + k) - len(seq.blocks)
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
        seq.state = SequenceState.WAITING
        seq.eligible_at = 0.0
        seq.record.preemptions += 1
        self.metrics.preemptions += 1
        self.waiting.appendleft(seq)

    def _complete(self, plan: _Plan, lag: float) -> None:
        now = time.perf_counter()
        k = plan.tokens_per_chunk
        for seq, chunk in plan.prefill:
            if seq.state is not SequenceState.PREFILL:
                continue
            seq.computed += chunk
            if seq.computed >= self._prefill_target(seq):
                seq.state = SequenceState.DECODE
                self.kv.register(seq.blocks, seq.hashes)
                if seq.record.prefill_end is None:
                    seq.record.prefill_end = time.time()
                    if seq.scheduled_mono is not None:
                        self.metrics.prefill_time.observe(now - seq.scheduled_mono)
                self._emit(seq, 1, now, lag)
        for seq in plan.decode:
            if seq.state is SequenceState.DECODE:
                self._emit(seq, k, now, lag)

    def _emit(self, seq: Sequence, n: int, now: float, lag: float) -> None:
        """Generate up to n tokens for `seq` and hand them to its writer as one or two events."""
        seq.record.step_lag_max = max(seq.record.step_lag_max, lag)
        if seq.first_token_mono is None:
            seq.first_token_mono = now
            self.metrics.ttft.observe(now - seq.arrival_mono)
            self.metrics.prompt_tokens += seq.num_prompt  # counted once, when prefill first completes, as vLLM
        elif seq.last_token_mono is not None:
            self.metrics.itl.observe(now - seq.last_token_mono)
        seq.last_token_mono = now
        kind: EventKind = ""
        text, count = "", seq.carried
        seq.carried = 0
        finish: str | None = None
        emitted = 0
        for _ in range(n):
            fault = seq.fault
            if fault is not None and not seq.fault_fired and seq.output == fault.after_tokens:
                # The one place a fault acts on generation: before token after_tokens + 1, so
                # exactly after_tokens tokens are generated, sent and billed before it.
                if count:
                    seq.push(Event(kind or "content", text, count, None, None))
                    text, count = "", 0
                self.metrics.generation_tokens += emitted
                emitted = 0
                if self._fire(seq, fault):
                    return
            emitted += 1
            seq.output += 1
            seq.computed += 1
            piece_kind: EventKind
            if seq.output <= seq.reasoning_len:
                piece_kind, piece = "reasoning", seq.text.reasoning()
                seq.reasoning_out += 1
            elif seq.natural_len is not None and seq.content_tokens > seq.natural_len:
                piece_kind, piece, finish = "content", seq.held, "stop"  # the end-of-sequence token
                seq.held = ""
            else:
                piece_kind, piece = "content", seq.text.content()
                if seq.stop:
                    piece, finish = self._hold_for_stop(seq, piece)
            if count and piece_kind != kind:
                seq.push(Event(kind, text, count, None, None))
                text, count = "", 0
            kind = piece_kind
            text += piece
            count += 1
            if finish is None and seq.output >= seq.max_tokens:
                finish = "length"
            if finish:
                break
        if finish == "length" and seq.held:
            text, seq.held = text + seq.held, ""
        self.metrics.generation_tokens += emitted
        if finish is None and not text and kind == "content":
            seq.carried = count  # all held back for a possible stop string: nothing to send yet
        elif count or finish:
            seq.push(Event(kind, text, count, finish, seq.stop_reason if finish else None))
        if finish:
            self._finish(seq, finish)

    def _fire(self, seq: Sequence, fault: FaultRule) -> bool:
        """Apply `seq`'s fault now; True when it ended the sequence."""
        seq.fault_fired = True
        if fault.kind == "engine_crash":
            raise InjectedCrash(f"injected engine crash at request {seq.record.number}, token {seq.output}")
        seq.push(Event("fault", "", 0, None, None))  # the writer acts here: stall, malformed frame, cut, ...
        if fault.ends_generation:
            self._finish(seq, "error" if fault.kind == "stream_error" else "abort")
            return True
        return False

    @staticmethod
    def _hold_for_stop(seq: Sequence, piece: str) -> tuple[str, str | None]:
        """What of the text so far can be sent, holding back what may begin a stop string.

        As vLLM does: the output ends just before the first stop string (which is not sent), and
        while streaming the last len(longest stop) - 1 characters wait until they cannot begin one.
        """
        held = seq.held + piece
        hits = [(held.find(stop), stop) for stop in seq.stop if stop in held]
        if hits:
            index, stop = min(hits)
            seq.held, seq.stop_reason = "", stop
            return held[:index], "stop"
        keep = max(len(stop) for stop in seq.stop) - 1
        seq.held = held[len(held) - keep :] if keep else ""
        return held[: len(held) - keep], None

    def _finish(self, seq: Sequence, reason: str) -> None:
        if seq.state is SequenceState.DONE:
            return
        if seq in self.running:
            self.running.remove(seq)
        if seq.blocks:
            self.kv.release(seq.blocks)
            seq.blocks = []
        seq.state = SequenceState.DONE
        seq.finish_reason = reason
        now = time.perf_counter()
        m = self.metrics
        m.success[reason] += 1
        m.e2e.observe(now - seq.arrival_mono)
        m.request_prompt_tokens.observe(seq.num_prompt)
        m.request_generation_tokens.observe(seq.output)
        if seq.first_token_mono is not None:
            m.decode_time.observe(now - seq.first_token_mono)
        rec = seq.record
        rec.prompt_tokens = seq.num_prompt
        rec.completion_tokens = seq.output
        rec.reasoning_tokens = seq.reasoning_out
        rec.content_tokens = seq.content_tokens
        rec.finish_reason = reason
        seq.wake()
        self._poke()


def check_capacity(settings: ModelSettings) -> None:
    if settings.kv_cache_tokens < settings.max_model_len + BLOCK_SIZE:
        raise SettingsError(
            f"kv_cache_tokens ({settings.kv_cache_tokens}) must hold one sequence of max_model_len "
            f"({settings.max_model_len}) plus a block of {BLOCK_SIZE}; raise kv_cache_tokens or lower max_model_len"
        )
