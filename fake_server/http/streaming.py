"""Writing one generation back to the client, chunk by chunk, with faults and ledger times.

This is a plain ASGI response rather than sse-starlette's `EventSourceResponse`: the ledger needs
the moment each chunk was handed to the socket, and faults must land between two frames (a cut
mid-body, a malformed frame, an in-stream error), which is easiest to get exactly right one
`send` at a time. A background task watches for the client going away and aborts the sequence at
once, so its slot and KV blocks are free before the next engine step. An injected stall ends there
too: vLLM cancels the handler of a client that has gone (its `with_cancellation`), so a stalled
request's record ends when its client gave up, not when the stall would have.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from starlette.types import Receive, Send

from fake_server.engine.faults import FaultRule
from fake_server.engine.ledger import Ledger, LedgerRecord
from fake_server.engine.sequence import Sequence, usage_of
from fake_server.engine.step_loop import Engine
from fake_server.http.sse import FrameSender, Framing
from fake_server.http.wire import DONE, ChatEncoder, CompletionEncoder, continuous_usage

__all__ = ["SSE_HEADERS", "Reply", "StreamWriter", "collect", "stall_before_answer", "watch_disconnect"]


SSE_HEADERS = [(b"content-type", b"text/event-stream; charset=utf-8"), (b"cache-control", b"no-cache")]
_MALFORMED = b'data: {"id": "chatcmpl-broken", "choices": [{"delta": {"content": \n\n'


async def watch_disconnect(receive: Receive, on_disconnect: Callable[[], None]) -> None:
    while True:
        message = await receive()
        if message["type"] == "http.disconnect":
            on_disconnect()
            return


async def hold(gone: asyncio.Event, seconds: float) -> None:
    """An injected stall: wait `seconds`, or until the client has gone (`gone` is set)."""
    with contextlib.suppress(TimeoutError):
        await asyncio.wait_for(gone.wait(), seconds)


async def stall_before_answer(receive: Receive, seconds: float) -> bool:
    """Hold the answer back `seconds` before anything is sent; True when the client left meanwhile."""
    gone = asyncio.Event()
    watcher = asyncio.create_task(watch_disconnect(receive, gone.set))
    try:
        await hold(gone, seconds)
    finally:
        watcher.cancel()
    return gone.is_set()


@dataclass(frozen=True)
class Reply:
    """One admitted generation and what its answer needs, streamed or whole."""

    engine: Engine
    seq: Sequence
    ledger: Ledger
    fault: FaultRule | None
    chat: bool  # /v1/chat/completions, else /v1/completions
    created: int  # the answer's `created`
    model: str  # the answer's `model`: the first served name
    headers: list[tuple[bytes, bytes]] = field(default_factory=list)  # the persona's extra headers
    on_finish: Callable[[LedgerRecord], None] | None = None  # the persona's, just before the record is added

    @property
    def record(self) -> LedgerRecord:
        return self.seq.record


class StreamWriter:
    """The ASGI response of one streamed generation."""

    def __init__(self, reply: Reply, *, include_usage: bool, continuous: bool, role_on_arrival: bool) -> None:
        engine = reply.engine
        self.engine = engine
        self.seq = reply.seq
        self.encoder: ChatEncoder | CompletionEncoder = (
            ChatEncoder(reply.record.id, reply.created, reply.model, engine.settings.vllm_profile)
            if reply.chat
            else CompletionEncoder(reply.record.id, reply.created, reply.model)
        )
        self.ledger = reply.ledger
        self.fault = reply.fault if reply.fault is not None and reply.fault.in_stream else None
        self.include_usage = include_usage
        self.continuous = continuous
        self.chat = reply.chat
        self.role_sent = not self.chat
        self.role_on_arrival = role_on_arrival
        self.headers = SSE_HEADERS + reply.headers
        self.on_finish = reply.on_finish
        self.tokens_sent = 0
        self.fault_applied = False
        self.framing = Framing.of(engine.settings)  # fixed for the whole stream
        self.frames: FrameSender | None = None
        self.gone = asyncio.Event()  # the client disconnected

    def _disconnected(self) -> None:
        self.gone.set()
        self.engine.abort(self.seq)

    async def __call__(self, scope: dict[str, Any], receive: Receive, send: Send) -> None:
        record = self.seq.record
        await send({"type": "http.response.start", "status": 200, "headers": self.headers})
        record.headers_sent = time.time()
        self.frames = FrameSender(send, self.framing, record)
        watcher = asyncio.create_task(watch_disconnect(receive, self._disconnected))
        try:
            complete = await self._pump(send)
            await self.frames.flush()  # what coalescing held back, including before a cut
            if complete:
                await send({"type": "http.response.body", "body": b"", "more_body": False})
        finally:
            watcher.cancel()
            self.engine.abort(self.seq)  # no-op unless the stream ended early
            if self.fault is not None:
                record.fault = {**self.fault.describe(), "applied": self.fault_applied or self.seq.fault_fired}
            if record.error is None and (self.seq.finish_reason == "abort" or self.gone.is_set()):
                record.error = "client disconnected"  # its generation may have ended before it left
            record.finished = time.time()
            if self.on_finish is not None:
                self.on_finish(record)
            self.ledger.add(record)

    async def _write(self, send: Send, body: bytes, kind: str, tokens: int) -> None:
        assert self.frames is not None
        await self.frames.event(body, kind, tokens)

    def _usage_suffix(self, completion: int) -> str:
        """Usage as of this chunk (tokens up to and including it), when the client asked for it on every chunk."""
        return continuous_usage(self.seq.num_prompt, completion) if self.continuous else ""

    async def _pump(self, send: Send) -> bool:
        """Send the stream; False when a fault ended it so the body must not be completed."""
        seq, enc = self.seq, self.encoder
        fault = self.fault
        if fault is not None and fault.kind == "stall_after_headers":
            self.fault_applied = True
            await hold(self.gone, fault.seconds)
            if self.gone.is_set():  # nothing is sent to a client that left during the stall
                return False
        if self.chat and self.role_on_arrival:
            await self._send_role(send)
        while True:
            events = await seq.next_events()
            if not events:
                break
            for event in events:
                kind, text, count = event.kind, event.text, event.tokens
                if kind == "role":
                    await self._send_role(send)
                    continue
                if not self.role_sent:
                    await self._send_role(send)
                if kind == "fault" and fault is not None:
                    outcome = await self._apply_fault(send, fault)
                    if outcome is not None:
                        return outcome
                    continue
                if kind == "error":
                    return await self._send_error(send, 500, text)
                finish = event.finish_reason
                body = enc.delta(kind, text, finish, event.stop_reason, self._usage_suffix(self.tokens_sent + count))
                # A content chunk with no text (the end-of-sequence token) shows the user nothing:
                # the ledger calls it "finish", so the last content chunk is the last visible one.
                await self._write(send, body, "finish" if kind == "content" and not text else kind, count)
                self.tokens_sent += count
                if finish is not None:
                    # Let the other streams of this step send their tokens before this one's
                    # closing work ([DONE], ledger), so finishing never delays someone else's token.
                    await asyncio.sleep(0)
        if seq.finish_reason not in ("stop", "length"):
            return False  # aborted: the client is gone
        if self.include_usage:
            details = self.engine.settings.enable_prompt_tokens_details
            await self._write(send, enc.usage(usage_of(seq, details)), "usage", 0)
        await self._write(send, DONE, "done", 0)
        return True

    async def _send_role(self, send: Send) -> None:
        if not self.role_sent and isinstance(self.encoder, ChatEncoder):
            self.role_sent = True
            await self._write(send, self.encoder.role(self._usage_suffix(0)), "role", 0)

    async def _apply_fault(self, send: Send, fault: FaultRule) -> bool | None:
        """Render the fault where the engine applied it; a bool ends the stream (True: complete
        the body cleanly). The engine has already ended generation for the kinds that end it."""
        record = self.seq.record
        assert self.frames is not None
        await self.frames.flush()  # the fault acts after every token before it has left
        if fault.kind == "stall":
            await hold(self.gone, fault.seconds)
            return False if self.gone.is_set() else None
        if fault.kind == "malformed_chunk":
            await self._write(send, _MALFORMED, "malformed", 0)
            return None
        if fault.kind == "cut":
            record.error = f"connection cut after {self.tokens_sent} tokens (fault)"
            return False
        if fault.kind == "no_done":
            record.error = f"stream ended without [DONE] after {self.tokens_sent} tokens (fault)"
            return True
        record.error = f"in-stream error after {self.tokens_sent} tokens (fault)"
        return await self._send_error(
            send, fault.status, fault.message or "The engine failed while generating this response."
        )

    async def _send_error(self, send: Send, status: int, message: str) -> bool:
        """vLLM's in-stream error event, then [DONE]."""
        if self.seq.record.error is None:
            self.seq.record.error = message
        await self._write(send, self.encoder.error(status, message), "error", 0)
        await self._write(send, DONE, "done", 0)
        return True


async def collect(engine: Engine, seq: Sequence, receive: Receive, stall: float = 0.0) -> tuple[bool, str, str]:
    """Wait for a non-streamed generation to end: (client still there, content, reasoning).

    `stall` (an injected fault) holds the answer back that long after generation starts; a client
    that leaves meanwhile ends it and frees its slot at once, as in a stream.
    """
    gone = asyncio.Event()
    content: list[str] = []
    reasoning: list[str] = []

    def disconnected() -> None:
        gone.set()
        engine.abort(seq)

    watcher = asyncio.create_task(watch_disconnect(receive, disconnected))
    try:
        if stall:
            await hold(gone, stall)
        while True:
            events = await seq.next_events()
            if not events:
                break
            for event in events:
                if event.kind == "content":
                    content.append(event.text)
                elif event.kind == "reasoning":
                    reasoning.append(event.text)
    finally:
        watcher.cancel()
    return not gone.is_set(), "".join(content), "".join(reasoning)
