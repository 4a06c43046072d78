"""Server-sent events, cut out of a byte stream whole, so a relay can forward each one as it is.

The gateway forwards the local route's events byte for byte; it only needs to know where each
event ends and what kind it is ([DONE], an in-stream error, a chunk, a comment, or garbage).
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any, Literal

__all__ = ["DONE", "Event", "EventKind", "EventSplitter", "classify", "encode"]

EventKind = Literal["chunk", "done", "error", "comment", "malformed"]
DONE = b"data: [DONE]\n\n"
_BOUNDARY = re.compile(rb"\r\n\r\n|\n\n|\r\r")
_LINE = re.compile(r"\r\n|\r|\n")


@dataclass(frozen=True)
class Event:
    raw: bytes          # the event as received, blank line included
    kind: EventKind
    error: str = ""     # for kind "error" and "malformed": what went wrong


class EventSplitter:
    """Feed bytes as they arrive; get back every event completed so far (an event may span reads)."""

    def __init__(self) -> None:
        self._buffer = b""

    def feed(self, data: bytes) -> list[Event]:
        self._buffer += data
        events = []
        while (match := _BOUNDARY.search(self._buffer)) is not None:
            raw, self._buffer = self._buffer[: match.end()], self._buffer[match.end():]
            events.append(classify(raw))
        return events


def classify(raw: bytes) -> Event:
    """What an event is. Its `data:` lines (with or without a space after the colon) are joined by newlines."""
    data = [line[5:].removeprefix(" ") for line in _LINE.split(raw.decode("utf-8", "replace"))
            if line.startswith("data:")]
    if not data:
        return Event(raw, "comment")
    payload = "\n".join(data)
    if payload.strip() == "[DONE]":
        return Event(raw, "done")
    try:
        chunk = json.loads(payload)
    except json.JSONDecodeError:
        return Event(raw, "malformed", f"a chunk that is not JSON: {payload[:80]!r}")
    if not isinstance(chunk, dict):
        return Event(raw, "malformed", f"a chunk that is not a JSON object: {payload[:80]!r}")
    if "error" in chunk:
        error = chunk["error"]
        message = error.get("message") if isinstance(error, dict) else error
        return Event(raw, "error", str(message))
    return Event(raw, "chunk")


def encode(payload: dict[str, Any]) -> bytes:
    """One `data:` event, as vLLM frames it."""
    return b"data: " + json.dumps(payload, separators=(",", ":")).encode() + b"\n\n"
