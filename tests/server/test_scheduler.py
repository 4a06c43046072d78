"""The scheduler alone: a clock value passed in, no server, no sleep, no event loop."""

from __future__ import annotations

from fake_server.engine.events import Finished, Lifecycle, Preempted, PrefillDone, Queued, Scheduled
from fake_server.engine.kv_cache import KVCache
from fake_server.engine.ledger import LedgerRecord
from fake_server.engine.scheduler import Scheduler
from fake_server.engine.sequence import Sequence, SequenceState
from fake_server.engine.textgen import TextStream
from fake_server.settings import ModelSettings


def make(kv_tokens: int = 1 << 16, **settings: object) -> tuple[Scheduler, list[Lifecycle]]:
    events: list[Lifecycle] = []
    s = ModelSettings(**settings)  # type: ignore[arg-type]
    return Scheduler(s, KVCache(kv_tokens, prefix_caching=False), events.append), events


def seq(number: int, prompt: int = 10, max_tokens: int = 100, eligible_at: float = 0.0) -> Sequence:
    record = LedgerRecord(id=f"r{number}", number=number, model="m", endpoint="chat", stream=True, arrival=0.0)
    return Sequence(
        record,
        list(range(prompt)),
        TextStream(0, None, number),
        max_tokens=max_tokens,
        natural_len=None,
        reasoning_len=0,
        stop=(),
        eligible_at=eligible_at,
        role_on_schedule=False,
    )


def step(sched: Scheduler, now: float) -> list[tuple[Sequence, int]]:
    """One step as the engine runs it, with every granted token generated (up to max_tokens)."""
    plan = sched.plan(now)
    done = []
    for s, n in sched.grants(plan, now):
        take = min(n, s.max_tokens - s.output)
        s.output += take
        sched.advance(s, take)
        done.append((s, take))
        if s.output >= s.max_tokens:
            sched.finish(s, "length", now)
    return done


def of(events: list[Lifecycle], kind: type) -> list[int]:
    return [e.seq.record.number for e in events if isinstance(e, kind)]


def test_admits_in_arrival_order_up_to_the_slot_limit() -> None:
    sched, events = make(max_num_seqs=2)
    seqs = [seq(i) for i in (1, 2, 3)]
    for s in seqs:
        sched.add(s, 0.0)
    plan = sched.plan(1.0)
    assert [s.record.number for s, _ in plan.prefill] == [1, 2]
    assert plan.starting == 2 and not plan.decode
    assert [s.record.number for s in sched.running] == [1, 2]
    assert list(sched.waiting) == [seqs[2]] and seqs[2].state is SequenceState.WAITING
    assert of(events, Queued) == [1, 2, 3]
    assert of(events, Scheduled) == [1, 2]
    assert all(e.now == 1.0 for e in events if isinstance(e, Scheduled))


def test_a_request_is_not_scheduled_before_its_queue_delay() -> None:
    sched, _ = make()
    sched.add(seq(1, eligible_at=5.0), 0.0)
    plan = sched.plan(4.0)
    assert plan.empty and plan.wake_at == 5.0
    assert [s.record.number for s, _ in sched.plan(5.0).prefill] == [1]


def test_chunked_prefill_stays_within_the_step_token_budget() -> None:
    sched, events = make(max_num_batched_tokens=64)
    long = seq(1, prompt=150)
    sched.add(long, 0.0)
    chunks = []
    for t in range(3):
        plan = sched.plan(float(t))
        chunks.append([c for _, c in plan.prefill])
        assert plan.prefill_tokens <= 64
        granted = list(sched.grants(plan, float(t)))
        assert granted == ([] if t < 2 else [(long, 1)])
    assert chunks == [[64], [64], [22]]
    assert long.state is SequenceState.DECODE
    assert of(events, PrefillDone) == [1]


def test_decoders_take_budget_before_prefill() -> None:
    sched, _ = make(max_num_batched_tokens=64, tokens_per_chunk=4)
    first = seq(1, prompt=10)
    sched.add(first, 0.0)
    step(sched, 0.0)  # prefill done, first token
    sched.add(seq(2, prompt=200), 1.0)
    plan = sched.plan(1.0)
    assert plan.decode == [first]
    assert [c for _, c in plan.prefill] == [60]


def test_kv_full_preempts_the_newest_sequence() -> None:
    # 6 blocks of 16 tokens; each prompt of 16 takes 2 blocks at admission.
    sched, events = make(kv_tokens=96)
    a, b, c = seq(1, prompt=16), seq(2, prompt=16), seq(3, prompt=16)
    for s in (a, b, c):
        sched.add(s, 0.0)
    step(sched, 0.0)
    assert sched.running == [a, b, c] and sched.kv.free_blocks == 0
    for t in range(1, 33):  # a third block at output 16, a fourth at 32: none is free
        step(sched, float(t))
    assert of(events, Preempted) == [3, 2]
    assert [s.record.number for s in sched.waiting] == [2, 3]  # back at the front, oldest first
    assert b.state is SequenceState.WAITING and b.computed == 0 and not b.blocks
    assert sched.running == [a] and a.state is SequenceState.DECODE
    # Preempted sequences are not reported as scheduled again when readmitted.
    assert of(events, Scheduled) == [1, 2, 3]


def test_finishing_frees_the_slot_and_the_blocks_for_the_next_request() -> None:
    sched, events = make(max_num_seqs=1)
    first, second = seq(1, max_tokens=2), seq(2)
    sched.add(first, 0.0)
    sched.add(second, 0.0)
    step(sched, 0.0)
    assert sched.running == [first] and list(sched.waiting) == [second]
    step(sched, 1.0)  # second token: max_tokens reached
    assert first.state is SequenceState.DONE and first.finish_reason == "length"
    assert not first.blocks and sched.running == []
    finished = [e for e in events if isinstance(e, Finished)]
    assert [(e.seq, e.reason, e.now) for e in finished] == [(first, "length", 1.0)]
    assert sched.plan(2.0).prefill == [(second, 10)]
    assert sched.finish(first, "abort", 3.0) is False  # an ended sequence is not ended twice


def test_aborting_a_waiting_request_takes_it_out_of_the_queue() -> None:
    sched, events = make(max_num_seqs=1)
    first, second = seq(1), seq(2)
    sched.add(first, 0.0)
    sched.add(second, 0.0)
    sched.plan(0.0)
    assert sched.finish(second, "abort", 0.5)
    assert not sched.waiting and second.state is SequenceState.DONE
    assert of(events, Finished) == [2]
