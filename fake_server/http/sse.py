"""How a stream's events go onto the wire: SSE framing variants and how events map to writes.

vLLM writes every event as `data: <json>\\n\\n` in a write of its own. Other servers and the
proxies between them differ, and a client that follows the SSE rules (WHATWG HTML, "Server-sent
events": lines end in CRLF, LF or CR; one space after the colon is optional; lines starting with
`:` are comments) reads all of these the same way:

  sse_line_ending         lf (vLLM), crlf (sse-starlette) or cr
  sse_data_space          `data: x` (vLLM) or `data:x`
  sse_keepalive_comments  a `: keep-alive` comment before every k-th event (0: none)
  sse_split_writes        every write is made in two halves, `SPLIT_PAUSE` apart, so a reader
                          sees a partial event first
  sse_coalesce            k events are held back and written together in one write
  sse_multiline_data      each event's JSON on several `data:` lines, broken after a comma (the
                          reader joins them with a newline, which JSON reads as space)

The encoders produce canonical `data: <payload>\\n\\n` frames; `Framing.frame` rewrites them.
The ledger stamps each event with the moment the write that carried its last byte returned,
so coalescing and splitting show up in the send times as they would to a client.
"""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass, field

from starlette.types import Send

from fake_server.engine.ledger import LedgerRecord
from fake_server.settings import ModelSettings

__all__ = ["LINE_ENDINGS", "SPLIT_PAUSE", "FrameSender", "Framing"]


LINE_ENDINGS = {"lf": b"\n", "crlf": b"\r\n", "cr": b"\r"}
SPLIT_PAUSE = 0.002  # seconds between the two halves of a split write
_CANONICAL_HEAD = b"data: "
_CANONICAL_TAIL = b"\n\n"


@dataclass(frozen=True)
class Framing:
    """One stream's framing, fixed when the stream starts."""

    line_ending: bytes = b"\n"
    data_space: bool = True
    keepalive_every: int = 0
    split_writes: bool = False
    coalesce: int = 1
    multiline: bool = False

    @classmethod
    def of(cls, settings: ModelSettings) -> Framing:
        return cls(
            LINE_ENDINGS[settings.sse_line_ending],
            settings.sse_data_space,
            settings.sse_keepalive_comments,
            settings.sse_split_writes,
            settings.sse_coalesce,
            settings.sse_multiline_data,
        )

    @property
    def plain(self) -> bool:
        """vLLM's framing: the canonical frames, each in a write of its own."""
        return not (self.rewrites or self.keepalive_every or self.split_writes or self.coalesce > 1)

    @property
    def rewrites(self) -> bool:
        return self.line_ending != b"\n" or not self.data_space or self.multiline

    def frame(self, canonical: bytes) -> bytes:
        """Rewrite one canonical `data: <payload>\\n\\n` frame in this framing."""
        if not self.rewrites:
            return canonical
        assert canonical.startswith(_CANONICAL_HEAD) and canonical.endswith(_CANONICAL_TAIL)
        payload = canonical[len(_CANONICAL_HEAD) : -len(_CANONICAL_TAIL)]
        head = b"data: " if self.data_space else b"data:"
        # a break after each comma before a key or a string (a quote inside a string is escaped, so `,"` is always
        # between members): the lines joined with a newline are the same JSON again
        lines = payload.replace(b',"', b',\n"').split(b"\n") if self.multiline else [payload]
        return b"".join(head + line + self.line_ending for line in lines) + self.line_ending

    def comment(self) -> bytes:
        return b": keep-alive" + self.line_ending * 2


@dataclass
class FrameSender:
    """Writes one stream's events in its framing and stamps each in the ledger once it is sent."""

    send: Send
    framing: Framing
    record: LedgerRecord
    events: int = 0
    _buffer: list[bytes] = field(default_factory=list)
    _stamps: list[tuple[str, int]] = field(default_factory=list)

    async def event(self, canonical: bytes, kind: str, tokens: int) -> None:
        """Queue one event; it is written now unless coalescing holds it for the next ones."""
        f = self.framing
        if f.plain:  # vLLM's framing, the common case: one write, no copies
            self.events += 1
            await self.send({"type": "http.response.body", "body": canonical, "more_body": True})
            self.record.add_chunk(time.time(), kind, tokens)
            return
        if f.keepalive_every and self.events % f.keepalive_every == 0:
            if f.coalesce > 1:
                self._buffer.append(f.comment())
            else:
                await self._write(f.comment())
        self.events += 1
        self._buffer.append(f.frame(canonical))
        self._stamps.append((kind, tokens))
        if len(self._stamps) >= f.coalesce:
            await self.flush()

    async def flush(self) -> None:
        """Write every held event (before a fault acts, and at the end of the stream)."""
        if not self._buffer:
            return
        body = b"".join(self._buffer)
        stamps = self._stamps
        self._buffer, self._stamps = [], []
        await self._write(body)
        now = time.time()
        for kind, tokens in stamps:
            self.record.add_chunk(now, kind, tokens)

    async def _write(self, body: bytes) -> None:
        if self.framing.split_writes and len(body) > 1:
            half = len(body) // 2
            await self.send({"type": "http.response.body", "body": body[:half], "more_body": True})
            await asyncio.sleep(SPLIT_PAUSE)
            body = body[half:]
        await self.send({"type": "http.response.body", "body": body, "more_body": True})
