"""SSE framing variants: the exact bytes and writes on the wire, read from a raw socket, and the
`openai` client (a real SSE parser) reading every variant to the same answer as vLLM's framing."""

from __future__ import annotations

import itertools
import json
import re
import socket
import time
from typing import Any

import openai
import pytest
from openai.types.chat import ChatCompletionMessageParam

from fake_server import RunningServer, build_settings, list_scenarios, serve

_PROMPT: list[ChatCompletionMessageParam] = [{"role": "user", "content": "Frame me"}]


def _raw_stream(port: int, body: dict[str, Any]) -> tuple[bytes, list[bytes]]:
    """POST over a plain socket; returns (de-chunked body, the HTTP chunks as written).

    uvicorn sends every ASGI body message as one HTTP/1.1 chunk in one transport write, so the
    chunk boundaries are the server's write boundaries whatever TCP did with the segments.
    """
    payload = json.dumps(body).encode()
    request = (
        b"POST /v1/chat/completions HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
        b"Connection: close\r\nContent-Length: " + str(len(payload)).encode() + b"\r\n\r\n" + payload
    )
    raw = b""
    deadline = time.monotonic() + 30
    with socket.create_connection(("127.0.0.1", port), timeout=30) as sock:
        sock.sendall(request)
        while time.monotonic() < deadline:
            part = sock.recv(65536)
            if not part:
                break
            raw += part
    head, _, rest = raw.partition(b"\r\n\r\n")
    assert head.startswith(b"HTTP/1.1 200") and b"transfer-encoding: chunked" in head.lower()
    chunks = []
    while True:
        size_line, _, rest = rest.partition(b"\r\n")
        size = int(size_line, 16)
        if size == 0:
            break
        chunks.append(rest[:size])
        assert rest[size : size + 2] == b"\r\n"
        rest = rest[size + 2 :]
    return b"".join(chunks), chunks


def _body(max_tokens: int = 12) -> dict[str, Any]:
    return {
        "model": "fake-model",
        "messages": _PROMPT,
        "max_tokens": max_tokens,
        "stream": True,
        "stream_options": {"include_usage": True},
    }


def _openai_text(server: RunningServer) -> tuple[str, int, int]:
    """(content, completion tokens from usage, chunks) as the openai client parses the stream."""
    client = openai.OpenAI(base_url=server.openai_base_url, api_key="unused", max_retries=0)
    content, usage, chunks = "", -1, 0
    stream = client.chat.completions.create(
        model="fake-model", messages=_PROMPT, max_tokens=12, stream=True, stream_options={"include_usage": True}
    )
    for chunk in stream:
        chunks += 1
        if chunk.choices and chunk.choices[0].delta.content:
            content += chunk.choices[0].delta.content
        if chunk.usage is not None:
            usage = chunk.usage.completion_tokens
    return content, usage, chunks


def test_builtin_scenarios_cover_each_variant() -> None:
    names = {name for name, _ in list_scenarios()}
    assert {"sse-crlf-nospace", "sse-cr-comments", "sse-split-coalesced"} <= names
    s = build_settings("sse-crlf-nospace").model
    assert (s.sse_line_ending, s.sse_data_space) == ("crlf", False)
    s = build_settings("sse-cr-comments").model
    assert (s.sse_line_ending, s.sse_keepalive_comments) == ("cr", 3)
    s = build_settings("sse-split-coalesced").model
    assert (s.sse_split_writes, s.sse_coalesce) == (True, 3)


def test_default_framing_is_vllms_one_event_per_write() -> None:
    with serve(token_rate=500) as server:
        body, writes = _raw_stream(server.port, _body())
    events = body.split(b"\n\n")
    assert events[-1] == b"" and all(e.startswith(b"data: {") or e == b"data: [DONE]" for e in events[:-1])
    assert b"\r" not in body
    assert writes == [e + b"\n\n" for e in events[:-1]]


def test_crlf_without_space_on_the_wire() -> None:
    with serve(scenario="sse-crlf-nospace", token_rate=500) as server:
        body, writes = _raw_stream(server.port, _body())
        record = server.ledger()[0]
    frames = body.split(b"\r\n\r\n")
    assert frames[-1] == b"" and frames[-2] == b"data:[DONE]"
    assert all(re.fullmatch(rb"data:\{[^\r\n]*\}", f) for f in frames[:-2])
    assert b"data: " not in body and body.count(b"\n") == body.count(b"\r\n")
    assert len(writes) == len(frames) - 1 == len(record["chunks"])


def test_lone_cr_and_keepalive_comments_on_the_wire() -> None:
    with serve(scenario="sse-cr-comments", token_rate=500) as server:
        body, writes = _raw_stream(server.port, _body())
        record = server.ledger()[0]
    assert b"\n" not in body
    blocks = body.split(b"\r\r")
    assert blocks[-1] == b""
    blocks = blocks[:-1]
    comments = [i for i, b in enumerate(blocks) if b == b": keep-alive"]
    events = [b for b in blocks if b != b": keep-alive"]
    assert all(b.startswith(b"data: ") for b in events) and events[-1] == b"data: [DONE]"
    # a comment before events 0, 3, 6, ...: block positions 0, 4, 8, ...
    assert comments == [4 * i for i in range((len(events) + 2) // 3)]
    assert len(events) == len(record["chunks"])
    assert len(writes) == len(blocks)  # each comment is a write of its own


def test_split_and_coalesced_writes_and_their_ledger_times() -> None:
    with serve(scenario="sse-split-coalesced", token_rate=200) as server:
        body, writes = _raw_stream(server.port, _body())
        record = server.ledger()[0]
    events = body.split(b"\n\n")[:-1]
    assert events[-1] == b"data: [DONE]"
    # every write of three events went out as two halves, the first ending inside an event
    assert len(writes) % 2 == 0
    groups = [writes[i] + writes[i + 1] for i in range(0, len(writes), 2)]
    assert all(not first.endswith(b"\n\n") for first in writes[::2])
    per_write = [g.count(b"\n\n") for g in groups]
    assert per_write[:-1] == [3] * (len(groups) - 1) and 1 <= per_write[-1] <= 3
    # events that left in one write carry one send time; the next write comes a token later or more
    times = [c[0] for c in record["chunks"]]
    assert len(times) == len(events)
    stamped = [times[i : i + 3] for i in range(0, len(times), 3)]
    assert all(len(set(group)) == 1 for group in stamped)
    assert all(b[0] - a[0] >= 0.002 for a, b in itertools.pairwise(stamped))


def test_one_event_over_several_data_lines_on_the_wire() -> None:
    with serve(scenario="sse-multiline", token_rate=500) as server:
        body, writes = _raw_stream(server.port, _body())
    events = body.split(b"\n\n")[:-1]
    assert events[-1] == b"data: [DONE]" and len(writes) == len(events)
    multi = [e for e in events if e.count(b"\n") >= 2]
    assert len(multi) == len(events) - 1  # every JSON event, [DONE] aside, spans three lines or more
    for event in multi:
        lines = event.split(b"\n")
        assert all(line.startswith(b"data: ") for line in lines)
        joined = b"\n".join(line[len(b"data: ") :] for line in lines)  # as the SSE standard joins them
        assert json.loads(joined)["object"] == "chat.completion.chunk"
        assert all(not _parses(line[len(b"data: ") :]) for line in lines)  # no line is JSON on its own


def _parses(text: bytes) -> bool:
    try:
        json.loads(text)
    except json.JSONDecodeError:
        return False
    return True


def test_a_server_that_ignores_stream_options_sends_no_usage_chunk() -> None:
    with serve(scenario="no-usage", token_rate=500) as server:
        body, _ = _raw_stream(server.port, _body())
        whole = json.loads(_raw_whole(server.port))
    chunks = [json.loads(e[len(b"data: ") :]) for e in body.split(b"\n\n")[:-1] if e != b"data: [DONE]"]
    assert chunks and all("usage" not in c or c["usage"] is None for c in chunks)
    assert all(c["choices"] for c in chunks)  # no `choices: []` usage chunk
    assert body.endswith(b"data: [DONE]\n\n")
    assert whole["usage"]["completion_tokens"] > 0  # a whole answer still carries it, as it always does


def _raw_whole(port: int) -> bytes:
    payload = json.dumps({"model": "fake-model", "messages": _PROMPT, "max_tokens": 12}).encode()
    request = (
        b"POST /v1/chat/completions HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
        b"Connection: close\r\nContent-Length: " + str(len(payload)).encode() + b"\r\n\r\n" + payload
    )
    raw = b""
    with socket.create_connection(("127.0.0.1", port), timeout=30) as sock:
        sock.sendall(request)
        while part := sock.recv(65536):
            raw += part
    return raw.partition(b"\r\n\r\n")[2]


@pytest.mark.parametrize("scenario", ["sse-crlf-nospace", "sse-cr-comments", "sse-split-coalesced", "sse-multiline"])
def test_openai_client_reads_each_variant_like_vllms_framing(scenario: str) -> None:
    with serve(scenario="baseline", token_rate=500) as plain:
        expected = _openai_text(plain)
    with serve(scenario=scenario, token_rate=500) as server:
        got = _openai_text(server)
        record = server.ledger()[0]
    assert got == expected
    assert got[1] == 12 == record["completion_tokens"] and got[0].count(" ") == 12
    assert got[2] == sum(1 for c in record["chunks"] if c[1] != "done")


def test_framing_flags_on_the_command_line() -> None:
    from click.testing import CliRunner

    from fake_server.cli import main

    result = CliRunner().invoke(main, ["serve", "--help"])
    for flag in (
        "--sse-line-ending",
        "--sse-data-space",
        "--no-sse-data-space",
        "--sse-keepalive-comments",
        "--sse-split-writes",
        "--sse-coalesce",
    ):
        assert flag in result.output
    result = CliRunner().invoke(main, ["serve", "--sse-line-ending", "lfcr"])
    assert result.exit_code == 2 and "lfcr" in result.output
