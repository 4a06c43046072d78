"""What one chat-completion stream said, folded event by event into the facts the report needs.

The rules (the contract's definitions, and the mistakes real tools made):

* TTFT stops at the first chunk whose `delta.content` is a non-empty string. The role-only first
  chunk (`{"role": "assistant", "content": ""}`), reasoning deltas (`reasoning`,
  `reasoning_content`), the finish chunk, the usage chunk and `[DONE]` do not stop it.
* A usage chunk has `choices: []`; nothing here indexes `choices[0]` without looking.
* Per-request TPS spans the first to the last non-empty content delta. The finish chunk (vLLM
  sends the end-of-sequence token as `"content": ""` with the finish reason, and may send it late),
  the usage chunk and `[DONE]` do not extend it; the end-of-sequence token is still counted among
  the output tokens, as usage counts it.
* Output tokens come from the last `usage` seen (completion minus reasoning tokens). Without
  usage they are the number of non-empty content deltas, which is a count of chunks, not of
  tokens, when a server puts several tokens in one chunk; the result says which was used.
* An event with empty data is a keep-alive and is skipped.
* The stream is complete only with `data: [DONE]`. An error event (`{"error": ...}`, the older
  `{"object": "error", ...}`, or `event: error`) or a payload that is not a JSON object ends it as
  a failure; whatever follows is ignored.
"""

from __future__ import annotations

import json
from typing import Any

from .sse import SSEEvent

__all__ = ["StreamTracker"]

_REASONING_KEYS = ("reasoning", "reasoning_content")


class StreamTracker:
    """Feed it each event with the time it arrived; read the verdict when it is finished."""

    def __init__(self) -> None:
        self.id: str | None = None
        self.done = False  # `[DONE]` arrived
        self.failure: str | None = None  # "stream_error" | "malformed"
        self.message: str | None = None  # the failure in words
        self.first_content: float | None = None  # when the first non-empty content arrived (TTFT's end)
        self.last_content: float | None = None  # when the last non-empty content arrived (the TPS span's end)
        self.content_chunks = 0  # chunks with non-empty content
        self.reasoning_chunks = 0
        self.finish_reason: str | None = None
        self.usage: dict[str, Any] | None = None

    @property
    def finished(self) -> bool:
        return self.done or self.failure is not None

    def feed(self, event: SSEEvent, t: float) -> None:
        """Take one event received at time `t` (any clock, as long as it is the same for a stream)."""
        if self.finished:
            return
        data = event.data.strip()
        if not data:
            return  # an event with empty data (a keep-alive) says nothing
        if data == "[DONE]":
            self.done = True
            return
        if event.event == "error":
            self._fail("stream_error", f"in-stream error event: {data[:200]}")
            return
        try:
            chunk = json.loads(data)
        except ValueError:
            self._fail("malformed", f"a data line is not JSON: {data[:80]!r}")
            return
        if not isinstance(chunk, dict):
            self._fail("malformed", f"a data line is not a JSON object: {data[:80]!r}")
            return
        if self.id is None and isinstance(chunk.get("id"), str):
            self.id = chunk["id"]
        if chunk.get("error") is not None or chunk.get("object") == "error":
            self._fail("stream_error", _error_message(chunk))
            return
        usage = chunk.get("usage")
        if isinstance(usage, dict):
            self.usage = usage
        choices = chunk.get("choices", [])
        if not isinstance(choices, list):
            self._fail("malformed", "`choices` is not a list")
            return
        for choice in choices:
            if isinstance(choice, dict) and choice.get("index", 0) == 0:
                self._choice(choice, t)

    def _choice(self, choice: dict[str, Any], t: float) -> None:
        if choice.get("finish_reason") is not None:
            self.finish_reason = str(choice["finish_reason"])
        delta = choice.get("delta")
        if not isinstance(delta, dict):
            return
        if any(delta.get(key) for key in _REASONING_KEYS):
            self.reasoning_chunks += 1
        content = delta.get("content")
        if not isinstance(content, str):
            return
        if content:
            self.content_chunks += 1
            if self.first_content is None:
                self.first_content = t
            self.last_content = t

    def _fail(self, failure: str, message: str) -> None:
        self.failure = failure
        self.message = message

    def output_tokens(self) -> tuple[int, str]:
        """(content tokens, where they were counted from: "usage" or "content_deltas")."""
        if self.usage is not None and isinstance(self.usage.get("completion_tokens"), int):
            details = self.usage.get("completion_tokens_details")
            reasoning = details.get("reasoning_tokens") if isinstance(details, dict) else None
            return max(0, self.usage["completion_tokens"] - (reasoning if isinstance(reasoning, int) else 0)), "usage"
        return self.content_chunks, "content_deltas"

    def tps(self, tokens: int) -> float | None:
        """Output tokens over the time from the first to the last non-empty content delta; None with
        fewer than two of them (no span to divide by)."""
        if self.first_content is None or self.last_content is None or self.content_chunks < 2:
            return None
        span = self.last_content - self.first_content
        return tokens / span if span > 0 else None


def _error_message(chunk: dict[str, Any]) -> str:
    error = chunk.get("error")
    if isinstance(error, dict) and error.get("message"):
        return f"in-stream error: {error['message']}"
    if isinstance(error, str):
        return f"in-stream error: {error}"
    if chunk.get("message"):
        return f"in-stream error: {chunk['message']}"
    return "in-stream error event"
