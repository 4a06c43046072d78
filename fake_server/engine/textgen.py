"""Deterministic generated text: what the fake model "says".

Every generated token is one word from a fixed vocabulary with a leading space, so re-tokenizing
the generated text gives back exactly the number of content tokens that were generated. The words
depend only on the server seed, the request's own `seed` field and its prompt, never on timing or
arrival order, so two runs of a scenario produce the same text.
"""

from __future__ import annotations

import random
import zlib

__all__ = ["REASONING_WORDS", "WORDS", "TextStream"]

WORDS = [
    "the",
    "of",
    "and",
    "to",
    "in",
    "is",
    "that",
    "it",
    "for",
    "on",
    "with",
    "as",
    "was",
    "at",
    "by",
    "be",
    "this",
    "from",
    "or",
    "have",
    "not",
    "are",
    "but",
    "an",
    "they",
    "which",
    "one",
    "you",
    "were",
    "all",
    "we",
    "there",
    "can",
    "has",
    "more",
    "will",
    "if",
    "about",
    "when",
    "so",
    "some",
    "what",
    "out",
    "up",
    "time",
    "would",
    "other",
    "into",
    "only",
    "new",
    "also",
    "could",
    "its",
    "first",
    "any",
    "these",
    "may",
    "than",
    "then",
    "them",
    "most",
    "over",
    "model",
    "token",
    "serve",
    "batch",
    "cache",
    "queue",
    "slot",
    "prefill",
    "decode",
    "replica",
    "memory",
    "router",
    "gateway",
]
REASONING_WORDS = [
    "hmm",
    "so",
    "first",
    "consider",
    "the",
    "user",
    "asks",
    "about",
    "this",
    "then",
    "check",
    "whether",
    "maybe",
    "wait",
    "actually",
    "right",
    "because",
    "therefore",
    "step",
    "next",
    "options",
    "compare",
    "answer",
]


class TextStream:
    """Yields the words of one request's output, seeded by (server seed, request seed, prompt)."""

    __slots__ = ("_rng",)

    def __init__(self, server_seed: int, request_seed: int | None, prompt_key: int) -> None:
        mix = zlib.crc32(f"{server_seed}:{request_seed}:{prompt_key}".encode())
        self._rng = random.Random(mix)

    def content(self) -> str:
        return " " + WORDS[self._rng.randrange(len(WORDS))]

    def reasoning(self) -> str:
        return " " + REASONING_WORDS[self._rng.randrange(len(REASONING_WORDS))]

    def natural_length(self, low: int, high: int) -> int:
        """How many content tokens this answer has before its end-of-sequence token."""
        return self._rng.randint(low, high)
