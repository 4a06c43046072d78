"""What a stream's chunks mean, fed straight to the tracker (no server needed for these rules)."""

from __future__ import annotations

import json
from typing import Any

from loadgen import SSEEvent
from loadgen.stream import StreamTracker


def chunk(delta: dict[str, Any] | None = None, finish: str | None = None, **top: Any) -> str:
    body: dict[str, Any] = {"id": "chatcmpl-1", "object": "chat.completion.chunk", "model": "m", **top}
    if delta is not None:
        body["choices"] = [{"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish}]
    return json.dumps(body)


def usage(completion: int, reasoning: int | None = None) -> str:
    u: dict[str, Any] = {"prompt_tokens": 10, "completion_tokens": completion, "total_tokens": 10 + completion}
    if reasoning is not None:
        u["completion_tokens_details"] = {"reasoning_tokens": reasoning}
    return json.dumps({"id": "chatcmpl-1", "choices": [], "usage": u})


def track(*datas: str, event: str = "message") -> StreamTracker:
    """Feed the payloads one per second: payload k arrives at t = k."""
    tracker = StreamTracker()
    for t, data in enumerate(datas):
        tracker.feed(SSEEvent(data, event), float(t))
    return tracker


ROLE = chunk({"role": "assistant", "content": ""})


def test_role_only_first_chunk_is_not_the_first_token():
    t = track(ROLE, chunk({"content": " a"}), chunk({"content": " b"}), usage(2), "[DONE]")
    assert t.first_content == 1.0 and t.done and t.id == "chatcmpl-1"


def test_reasoning_deltas_are_not_the_first_token_either_name():
    t = track(ROLE, chunk({"reasoning": " hmm"}), chunk({"reasoning_content": " so"}), chunk({"content": " yes"}),
              usage(3, reasoning=2), "[DONE]")
    assert t.first_content == 3.0
    assert t.output_tokens() == (1, "usage")  # completion minus reasoning


def test_usage_chunk_with_empty_choices_is_read_not_indexed():
    t = track(ROLE, chunk({"content": " a"}), chunk({"content": ""}, finish="stop"), usage(2), "[DONE]")
    assert t.done and t.failure is None and t.output_tokens() == (2, "usage")


def test_without_usage_tokens_are_counted_from_content_deltas():
    t = track(ROLE, chunk({"content": " a"}), chunk({"content": " b c d"}), chunk({"content": ""}, finish="stop"),
              "[DONE]")
    # Two non-empty deltas; the second carried three words. Without usage and without the server's
    # tokenizer the count is of deltas, and the result says so.
    assert t.output_tokens() == (2, "content_deltas")


def test_the_last_usage_wins_with_continuous_usage_stats():
    t = track(chunk({"content": " a"}, usage={"completion_tokens": 1}),
              chunk({"content": " b"}, usage={"completion_tokens": 2}), "[DONE]")
    assert t.output_tokens() == (2, "usage")


def test_reasoning_only_stream_has_no_first_token_and_no_content_tokens():
    t = track(ROLE, chunk({"reasoning": " hmm"}), chunk({"reasoning": " so"}, finish="length"),
              usage(2, reasoning=2), "[DONE]")
    assert t.done and t.first_content is None and t.output_tokens() == (0, "usage")
    assert t.finish_reason == "length" and t.tps(0) is None


def test_tps_spans_first_to_last_non_empty_content_delta_not_the_finish_chunk():
    t = track(ROLE, chunk({"content": " a"}), chunk({"content": " b"}), chunk({"content": " c"}),
              chunk({"content": ""}, finish="stop"), usage(4), "[DONE]")
    assert (t.first_content, t.last_content) == (1.0, 3.0)
    assert t.tps(4) == 4 / 2.0  # usage counts the end-of-sequence token; its empty chunk does not stretch the span


def test_one_content_delta_and_an_empty_finish_chunk_give_no_tps():
    t = track(chunk({"content": " a"}), chunk({"content": ""}, finish="stop"), usage(2), "[DONE]")
    assert t.tps(2) is None


def test_one_content_chunk_gives_no_tps():
    t = track(chunk({"content": " a"}), usage(1), "[DONE]")
    assert t.tps(1) is None


def test_in_stream_error_fails_the_stream_and_later_done_is_ignored():
    error = json.dumps({"error": {"message": "engine died", "type": "InternalServerError", "param": None, "code": 500}})
    t = track(ROLE, chunk({"content": " a"}), error, "[DONE]")
    assert t.failure == "stream_error" and not t.done and "engine died" in (t.message or "")


def test_older_error_shape_and_error_event_type_fail_too():
    assert track(json.dumps({"object": "error", "message": "boom", "code": 500})).failure == "stream_error"
    assert track(json.dumps({"detail": "boom"}), event="error").failure == "stream_error"
    assert track("upstream timed out", event="error").failure == "stream_error"  # not JSON, still an error


def test_malformed_payloads_fail_as_malformed():
    assert track(ROLE, '{"id": "x", "choices": [{"delta": {"content": ').failure == "malformed"
    assert track("[1, 2]").failure == "malformed"
    assert track(json.dumps({"choices": {"0": {}}})).failure == "malformed"


def test_done_with_surrounding_space_and_empty_keep_alive_data():
    t = track("", chunk({"content": " a"}), " [DONE] ")
    assert t.done and t.failure is None
