"""The block allocator and prefix cache, on their own."""

from fake_server.engine.kv_cache import BLOCK_SIZE, KVCache, block_hashes


def test_block_hashes_chain_over_full_blocks_only() -> None:
    tokens = list(range(40))
    hashes = block_hashes(tokens)
    assert len(hashes) == 2  # 40 tokens: two full blocks of 16, 8 left over
    assert block_hashes(tokens[:32]) == hashes
    changed = [99] + tokens[1:]
    assert block_hashes(changed)[1] != hashes[1]  # a change early on renames every later block


def test_prefix_hits_need_a_registered_block_and_leave_one_token_to_compute() -> None:
    kv = KVCache(16 * 10)
    tokens = list(range(48))
    hashes = block_hashes(tokens)
    assert kv.cached_prefix(hashes, len(tokens)) == []
    blocks = kv.allocate([], 4)
    assert blocks is not None  # ten free blocks: four fit
    kv.register(blocks, hashes)
    kv.release(blocks)
    hit = kv.cached_prefix(hashes, len(tokens))
    assert len(hit) == 2  # 48 tokens: blocks 0 and 1; block 2 would leave nothing to compute
    assert len(kv.cached_prefix(hashes, 49)) == 3


def test_allocation_counts_reclaimed_cached_blocks_and_refuses_when_full() -> None:
    kv = KVCache(16 * 4)
    a = kv.allocate([], 3)
    assert a is not None and kv.free_blocks == 1
    assert kv.allocate([], 2) is None
    assert kv.append() is not None and kv.append() is None
    assert kv.usage() == 1.0


def test_freed_blocks_are_evicted_least_recently_freed_first_tail_before_head() -> None:
    kv = KVCache(16 * 4)
    first = kv.allocate([], 2)
    second = kv.allocate([], 2)
    assert first is not None and second is not None  # four free blocks: two and two fit
    h1, h2 = block_hashes(list(range(32))), block_hashes(list(range(100, 132)))
    kv.register(first, h1)
    kv.register(second, h2)
    kv.release(first)
    kv.release(second)
    assert kv.used_blocks == 0
    kv.allocate([], 1)  # takes the tail of `first`
    assert len(kv.cached_prefix(h1, 33)) == 1 and len(kv.cached_prefix(h2, 33)) == 2


def test_disabled_prefix_caching_never_hits() -> None:
    kv = KVCache(16 * 4, prefix_caching=False)
    blocks = kv.allocate([], 2)
    assert blocks is not None  # four free blocks: two fit
    hashes = block_hashes(list(range(2 * BLOCK_SIZE)))
    kv.register(blocks, hashes)
    kv.release(blocks)
    assert kv.cached_prefix(hashes, 40) == []
