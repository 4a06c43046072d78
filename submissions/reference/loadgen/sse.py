"""An incremental text/event-stream parser, as the WHATWG HTML standard (§9.2.6) defines the format.

Real servers differ in the details a naive `line.startswith("data: ")` parser gets wrong:
`data:` with or without the space, CRLF or a lone CR as line ends, `: ping` keep-alive comments,
an event split across two reads (even between the CR and the LF of one line end), and events whose
data spans several `data:` lines. Feed it bytes as they arrive; it returns each event once its
blank line has arrived. At the end of the stream, an event without its blank line is discarded,
as the standard says, so a stream cut in the middle of `data: [DONE]` never counts as complete.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

__all__ = ["SSEDecoder", "SSEEvent"]

_LINE_END = re.compile(rb"\r\n|\r|\n")
_BOM = b"\xef\xbb\xbf"


@dataclass(frozen=True, slots=True)
class SSEEvent:
    data: str
    event: str = "message"
    id: str | None = None


class SSEDecoder:
    """Bytes in, complete events out; keeps whatever is unfinished for the next `feed`."""

    __slots__ = ("_buffer", "_data", "_event", "_id", "_skip_lf", "_started")

    def __init__(self) -> None:
        self._buffer = bytearray()
        self._data: list[str] = []
        self._event = ""
        self._id: str | None = None
        self._skip_lf = False  # the last read ended in CR: a LF first in the next one is its pair
        self._started = False

    def feed(self, chunk: bytes) -> list[SSEEvent]:
        if self._skip_lf and chunk:
            self._skip_lf = False
            if chunk[:1] == b"\n":
                chunk = chunk[1:]
        self._buffer += chunk
        if not self._started:
            if len(self._buffer) < len(_BOM) and _BOM.startswith(self._buffer):
                return []  # perhaps a byte-order mark still arriving
            self._started = True
            if self._buffer.startswith(_BOM):
                del self._buffer[: len(_BOM)]
        events: list[SSEEvent] = []
        if b"\r" not in self._buffer:  # the common case (vLLM): LF only, so a plain split will do
            *lines, rest = bytes(self._buffer).split(b"\n")
            for line in lines:
                event = self._line(line.decode("utf-8", errors="replace"))
                if event is not None:
                    events.append(event)
            self._buffer = bytearray(rest)
            return events
        consumed = 0
        for match in _LINE_END.finditer(self._buffer):
            line = bytes(self._buffer[consumed : match.start()])
            consumed = match.end()
            event = self._line(line.decode("utf-8", errors="replace"))
            if event is not None:
                events.append(event)
        if consumed and self._buffer[consumed - 1 : consumed] == b"\r":
            self._skip_lf = True
        del self._buffer[:consumed]
        return events

    def _line(self, line: str) -> SSEEvent | None:
        if not line:
            return self._dispatch()
        if line.startswith(":"):
            return None  # a comment, e.g. ": ping"
        name, colon, value = line.partition(":")
        if colon and value.startswith(" "):
            value = value[1:]
        if name == "data":
            self._data.append(value)
        elif name == "event":
            self._event = value
        elif name == "id" and "\0" not in value:
            self._id = value
        # `retry` and unknown fields are ignored, as the standard says
        return None

    def _dispatch(self) -> SSEEvent | None:
        data, event = self._data, self._event
        self._data, self._event = [], ""
        if not data:
            return None
        return SSEEvent("\n".join(data), event or "message", self._id)
