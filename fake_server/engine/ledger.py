"""The ground-truth ledger: what the server really did with each request, and when.

Times are Unix epoch seconds (`time.time()`), so a client on the same machine can compare its own
clock with them. Chunk times are taken right after the chunk was handed to the socket, not when the
engine produced it, so they are what a client could at best observe. A record is written when its
request ends, whatever the ending (finished, aborted by the client, cut by a fault).

Chunk kinds: `role` (the role-only first chunk), `reasoning`, `content` (visible text), `finish` (a
chunk with no visible text that ends the answer: the end-of-sequence token of a natural stop),
`usage`, `done` ([DONE]), and `error` (an in-stream error event) or `malformed` (a line that is not JSON)
where a fault acted; each with the tokens it carried.

A reset starts a new generation: request numbers start again at 1, and the records of requests
that arrived before the reset (even those that end after it) belong to their own generation, so
they never mix into the new one or collide with its numbers. Every record carries its
`generation`; `records()` reads the current one unless asked for another.
"""

from __future__ import annotations

import json
import threading
from collections import deque
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

__all__ = ["Ledger", "LedgerRecord"]


@dataclass(slots=True)
class LedgerRecord:
    id: str
    number: int
    model: str
    endpoint: str
    stream: bool
    arrival: float
    max_tokens: int | None = None
    status: int = 200
    fault: dict[str, Any] | None = None
    headers_sent: float | None = None
    queued: float | None = None
    scheduled: float | None = None
    prefill_start: float | None = None
    prefill_end: float | None = None
    finished: float | None = None
    prompt_tokens: int = 0
    # the prompt's own text, the chat template's markers, role names and added system prompt aside: what a
    # client that sends "a prompt of P tokens" controls
    message_tokens: int = 0
    cached_tokens: int = 0
    completion_tokens: int = 0
    reasoning_tokens: int = 0
    content_tokens: int = 0
    preemptions: int = 0
    generation: int = 0
    finish_reason: str | None = None
    error: str | None = None
    step_lag_max: float = 0.0
    cost_usd: float | None = None
    # Per chunk, in parallel lists (three containers per record rather than one per chunk, so a
    # long run does not feed the garbage collector): send time, kind
    # (role|reasoning|content|usage|error|malformed|done) and tokens carried.
    chunk_times: list[float] = field(default_factory=list)
    chunk_kinds: list[str] = field(default_factory=list)
    chunk_tokens: list[int] = field(default_factory=list)

    def add_chunk(self, t: float, kind: str, tokens: int) -> None:
        self.chunk_times.append(t)
        self.chunk_kinds.append(kind)
        self.chunk_tokens.append(tokens)

    @property
    def queue_wait(self) -> float | None:
        return None if self.scheduled is None else self.scheduled - self.arrival

    def first_content_time(self) -> float | None:
        for t, kind in zip(self.chunk_times, self.chunk_kinds):
            if kind == "content":
                return t
        return None

    def to_dict(self) -> dict[str, Any]:
        """The record as JSON-ready data; `chunks` is a list of [send_time, kind, tokens]."""
        out = asdict(self)
        for key in ("chunk_times", "chunk_kinds", "chunk_tokens"):
            del out[key]
        out["chunks"] = [list(c) for c in zip(self.chunk_times, self.chunk_kinds, self.chunk_tokens)]
        out["queue_wait"] = self.queue_wait
        out["first_content"] = self.first_content_time()
        return out


class Ledger:
    """Finished records in memory (the newest `keep`) and, optionally, in a JSONL file.

    It also counts requests that have arrived but not yet ended (`open` then `add`), so a reader
    can wait until the server has settled: a client may see `[DONE]` a moment before the record
    of its request is complete.
    """

    def __init__(self, path: str | Path | None = None, keep: int = 50_000) -> None:
        self._records: deque[LedgerRecord] = deque(maxlen=keep)
        self._changed = threading.Condition()
        self._in_flight: dict[int, int] = {}  # generation -> requests arrived and not yet ended
        self.generation = 0
        self._file = open(path, "a", encoding="utf-8") if path else None  # noqa: SIM115

    def open(self) -> int:
        """Count a request that has arrived; returns the generation its record belongs to."""
        with self._changed:
            self._in_flight[self.generation] = self._in_flight.get(self.generation, 0) + 1
            return self.generation

    def add(self, record: LedgerRecord) -> None:
        with self._changed:
            self._records.append(record)
            left = self._in_flight.get(record.generation, 0) - 1
            if left > 0:
                self._in_flight[record.generation] = left
            else:
                self._in_flight.pop(record.generation, None)
            if self._file is not None:
                self._file.write(json.dumps(record.to_dict()) + "\n")
                self._file.flush()
            self._changed.notify_all()

    @property
    def in_flight(self) -> int:
        """Requests of the current generation that have arrived and not yet ended."""
        return self._in_flight.get(self.generation, 0)

    def records(self, settle: float = 0.0, *, generation: int | None = None) -> list[LedgerRecord]:
        """The records of one generation (default: the current one), after waiting up to `settle`
        seconds for that generation's requests in flight to end."""
        with self._changed:
            gen = self.generation if generation is None else generation
            self._changed.wait_for(lambda: not self._in_flight.get(gen), timeout=settle)
            return [r for r in self._records if r.generation == gen]

    def new_generation(self) -> int:
        """Start a new generation (a reset): later records are read apart from earlier ones."""
        with self._changed:
            self.generation += 1
            self._changed.notify_all()
            return self.generation

    def close(self) -> None:
        if self._file is not None:
            self._file.close()
            self._file = None
