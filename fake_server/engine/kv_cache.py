"""The KV cache as vLLM manages it: fixed-size blocks, reference counts and a prefix cache.

A sequence holds one block per 16 tokens of prompt plus output. Full prompt blocks are named by a
hash chained over every token before them, so two prompts that share a prefix share those blocks.
A freed block keeps its hash and stays reusable until the allocator needs the space (least
recently freed first, the tail of a sequence before its head), which is what makes a repeated
prefix cheap and what `vllm:prefix_cache_hits` counts.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Sequence

__all__ = ["BLOCK_SIZE", "KVCache", "block_hashes"]

BLOCK_SIZE = 16


def block_hashes(token_ids: Sequence[int]) -> list[int]:
    """Chained hashes of the full blocks of a prompt."""
    out: list[int] = []
    parent = 0
    for start in range(0, len(token_ids) - BLOCK_SIZE + 1, BLOCK_SIZE):
        parent = hash((parent, tuple(token_ids[start : start + BLOCK_SIZE])))
        out.append(parent)
    return out


class KVCache:
    """`unbounded=True` adds blocks whenever the cache would be full, so nothing ever waits for
    KV space or is preempted (the slot-limit-ignored mode of the engine)."""

    def __init__(self, capacity_tokens: int, prefix_caching: bool = True, *, unbounded: bool = False) -> None:
        self.num_blocks = max(1, capacity_tokens // BLOCK_SIZE)
        self.prefix_caching = prefix_caching
        self.unbounded = unbounded
        self._ref = [0] * self.num_blocks
        self._hash: list[int | None] = [None] * self.num_blocks
        self._by_hash: dict[int, int] = {}
        # Free blocks in eviction order (front is evicted first); cached ones keep their hash.
        self._free: OrderedDict[int, None] = OrderedDict((b, None) for b in range(self.num_blocks))

    @property
    def free_blocks(self) -> int:
        return len(self._free)

    @property
    def used_blocks(self) -> int:
        return self.num_blocks - len(self._free)

    def usage(self) -> float:
        return self.used_blocks / self.num_blocks

    def cached_prefix(self, hashes: Sequence[int], prompt_len: int) -> list[int]:
        """Blocks holding the longest cached prefix; at least one prompt token is always recomputed."""
        if not self.prefix_caching:
            return []
        limit = (prompt_len - 1) // BLOCK_SIZE
        hit: list[int] = []
        for h in hashes[:limit]:
            block = self._by_hash.get(h)
            if block is None:
                break
            hit.append(block)
        return hit

    def allocate(self, cached: Sequence[int], total_blocks: int) -> list[int] | None:
        """Take the cached blocks and enough new ones for `total_blocks`, or None if they don't fit."""
        new = total_blocks - len(cached)
        reclaimed = sum(1 for b in cached if self._ref[b] == 0)
        if new > len(self._free) - reclaimed:
            if not self.unbounded:
                return None
            self._add_blocks(new - (len(self._free) - reclaimed))
        for b in cached:
            if self._ref[b] == 0:
                del self._free[b]
            self._ref[b] += 1
        return list(cached) + [self._take_free() for _ in range(new)]

    def append(self) -> int | None:
        """One more block for a growing sequence, or None when the cache is full."""
        if not self._free:
            if not self.unbounded:
                return None
            self._add_blocks(max(64, self.num_blocks // 4))
        return self._take_free()

    def _add_blocks(self, count: int) -> None:
        start = self.num_blocks
        self.num_blocks += count
        self._ref.extend([0] * count)
        self._hash.extend([None] * count)
        for b in range(start, self.num_blocks):
            self._free[b] = None

    def register(self, blocks: Sequence[int], hashes: Sequence[int]) -> None:
        """Name a sequence's full prompt blocks after prefill so later prompts can reuse them."""
        if not self.prefix_caching:
            return
        for block, h in zip(blocks, hashes):
            if self._hash[block] is None and h not in self._by_hash:
                self._hash[block] = h
                self._by_hash[h] = block

    def release(self, blocks: Sequence[int]) -> None:
        for b in reversed(blocks):
            self._ref[b] -= 1
            if self._ref[b] == 0:
                self._free[b] = None

    def reset_prefix_cache(self) -> None:
        for b in self._free:
            h = self._hash[b]
            if h is not None:
                del self._by_hash[h]
                self._hash[b] = None

    def _take_free(self) -> int:
        b, _ = self._free.popitem(last=False)
        h = self._hash[b]
        if h is not None:
            del self._by_hash[h]
            self._hash[b] = None
        self._ref[b] = 1
        return b
