"""The output stage: generated tokens become the text deltas a response writer sends.

Per token it picks reasoning or content (a reasoning model thinks first), ends the answer with the
end-of-sequence token (empty text, counted in usage) at its natural length or with `length` at
`max_tokens`, and applies stop strings as vLLM does: the output ends just before the first match
(which is not sent), and while streaming the last len(longest stop) - 1 characters wait until they
cannot begin one. Consecutive tokens of one kind are merged into one event. It knows nothing of
slots, KV blocks, time, the ledger or the metrics.
"""

from __future__ import annotations

from fake_server.engine.sequence import Event, EventKind, Sequence

__all__ = ["generate", "hold_for_stop"]


def generate(seq: Sequence, n: int, *, interrupted: bool = False) -> tuple[list[Event], int, str | None]:
    """Generate up to n tokens for `seq`: (events for its writer, tokens generated, finish reason).

    `interrupted`: something acts right after these n tokens (a fault), so everything generated
    is handed over now, even text held back for a stop string, unless the answer ended first.
    """
    events: list[Event] = []
    # Tokens of earlier steps whose text was all held back for a stop string are content: they go
    # out with the next content text, in its chunk, as vLLM sends them.
    kind: EventKind = "content"
    text, count = "", seq.carried
    seq.carried = 0
    finish: str | None = None
    generated = 0
    for _ in range(n):
        generated += 1
        seq.output += 1
        piece_kind: EventKind
        if seq.output <= seq.reasoning_len:
            piece_kind, piece = "reasoning", seq.text.reasoning()
            seq.reasoning_out += 1
        elif seq.natural_len is not None and seq.content_tokens > seq.natural_len:
            piece_kind, piece, finish = "content", seq.held, "stop"  # the end-of-sequence token
            seq.held = ""
        else:
            piece_kind, piece = "content", seq.text.content()
            if seq.stop:
                piece, finish = hold_for_stop(seq, piece)
        if count and piece_kind != kind:
            events.append(Event(kind, text, count))
            text, count = "", 0
        kind = piece_kind
        text += piece
        count += 1
        if finish is None and seq.output >= seq.max_tokens:
            finish = "length"
        if finish:
            break
    if interrupted and finish is None:
        if count:
            events.append(Event(kind, text, count))
        return events, generated, None
    if finish == "length" and seq.held:
        text, seq.held = text + seq.held, ""
    if finish is None and not text and kind == "content":
        seq.carried = count  # all held back for a possible stop string: nothing to send yet
    elif count or finish:
        events.append(Event(kind, text, count, finish, seq.stop_reason if finish else None))
    return events, generated, finish


def hold_for_stop(seq: Sequence, piece: str) -> tuple[str, str | None]:
    """What of the text so far can be sent, holding back what may begin a stop string."""
    held = seq.held + piece
    hits = [(held.find(stop), stop) for stop in seq.stop if stop in held]
    if hits:
        index, stop = min(hits)
        seq.held, seq.stop_reason = "", stop
        return held[:index], "stop"
    keep = max(len(stop) for stop in seq.stop) - 1
    seq.held = held[len(held) - keep :] if keep else ""
    return held[: len(held) - keep], None
