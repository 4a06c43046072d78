"""starter/api_client.py reads any valid SSE framing, and its streams free their connection early.

The decoder is fed by hand-written streams cut at every point; the clients read a real loopback
server that writes multi-line `data:` events, and the fake server in every framing it offers.
"""

from __future__ import annotations

import asyncio
import http.server
import json
import threading
import time
from collections.abc import Iterator
from typing import Any

import pytest
from api_client import ApiClient, AsyncApiClient, Prices, SSEDecoder, Timeouts

from fake_server import RunningServer, serve

KEY = "sk-test-0123456789"
MESSAGES = [{"role": "user", "content": "hi"}]


def _decode(pieces: list[str]) -> list[str]:
    decoder = SSEDecoder()
    return [data for piece in pieces for data in decoder.feed(piece)]


STREAM = ": hello\r\ndata: one\r\n\r\ndata:two\rdata:  three\r\rid: 7\nevent: x\ndata\n\n: bye\ndata: {\ndata: }\n\ndata: cut"
EVENTS = ["one", "two\n three", "", "{\n}"]  # the last event never ended: dropped


def test_decoder_reads_every_framing_wherever_the_reads_split() -> None:
    assert _decode([STREAM]) == EVENTS
    for cut in range(1, len(STREAM)):
        assert _decode([STREAM[:cut], STREAM[cut:]]) == EVENTS, cut
    assert _decode(list(STREAM)) == EVENTS  # one character per read
    assert _decode(["data: a\r", "\n", "\r\n"]) == ["a"]  # a CRLF split between reads is one line end
    assert _decode(["data: a\r", "\r"]) == ["a"]  # two CRs: a line end, then a blank line


class _MultiLineHandler(http.server.BaseHTTPRequestHandler):
    """Prices on GET, and on POST a stream of multi-line `data:` events with CR endings and comments,
    each written in two parts."""

    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args: object) -> None:
        pass

    def do_GET(self) -> None:
        body = json.dumps(
            {"data": [{"id": "m", "pricing": {"input_per_million_usd": 4, "output_per_million_usd": 20}}]}
        )
        self._send(200, "application/json", body.encode())

    def do_POST(self) -> None:
        self.rfile.read(int(self.headers["content-length"]))
        chunks = [
            {"model": "m", "choices": [{"index": 0, "delta": {"role": "assistant", "content": ""}}]},
            {"model": "m", "choices": [{"index": 0, "delta": {"content": "Hello"}}]},
            {"model": "m", "choices": [{"index": 0, "delta": {"content": " world"}, "finish_reason": "stop"}]},
            {"model": "m", "choices": [], "usage": {"prompt_tokens": 5, "completion_tokens": 2}},
        ]
        self.send_response(200)
        self.send_header("content-type", "text/event-stream")
        self.send_header("transfer-encoding", "chunked")
        self.end_headers()
        for chunk in chunks:
            lines = json.dumps(chunk, indent=1).split("\n")  # one JSON value over several data: lines
            event = ": tick\r" + "".join(f"data:{line}\r" for line in lines) + "\r"
            half = len(event) // 2
            for part in (event[:half], event[half:]):
                self._chunk(part.encode())
                time.sleep(0.002)
        self._chunk(b"data: [DONE]\r\r")
        self._chunk(b"")

    def _chunk(self, data: bytes) -> None:
        self.wfile.write(f"{len(data):x}\r\n".encode() + data + b"\r\n")
        self.wfile.flush()

    def _send(self, status: int, kind: str, body: bytes) -> None:
        self.send_response(status)
        self.send_header("content-type", kind)
        self.send_header("content-length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)


@pytest.fixture
def multiline_url() -> Iterator[str]:
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _MultiLineHandler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/v1"
    finally:
        server.shutdown()
        server.server_close()
        thread.join(10)


def test_multi_line_data_events_through_the_sync_client(multiline_url: str) -> None:
    with ApiClient(multiline_url, KEY) as client, client.stream_chat(MESSAGES, model="m") as stream:
        pieces = list(stream)
    assert [p.text for p in pieces[:-1]] == ["Hello", " world"]
    result = pieces[-1].result
    assert result is not None and result.text == "Hello world" and result.finish_reason == "stop"
    assert result.usage.output_tokens == 2 and result.cost_usd == pytest.approx((5 * 4 + 2 * 20) / 1e6)


def test_multi_line_data_events_through_the_async_client(multiline_url: str) -> None:
    async def run() -> list[str]:
        async with AsyncApiClient(multiline_url, KEY) as client, client.stream_chat(MESSAGES, model="m") as stream:
            return [p.text async for p in stream if p.text]

    assert asyncio.run(run()) == ["Hello", " world"]


# serve()'s keyword settings, each its own type (serve takes them as **overrides: Any)
FRAMINGS: list[dict[str, Any]] = [
    {},
    {"sse_line_ending": "crlf", "sse_data_space": False},
    {"sse_line_ending": "cr", "sse_keepalive_comments": 1},
    {"sse_split_writes": True, "sse_coalesce": 3},
]


@pytest.mark.parametrize("framing", FRAMINGS, ids=lambda f: ",".join(f"{k}={v}" for k, v in f.items()) or "vllm")
def test_every_framing_of_the_fake_server_reads_to_the_same_answer(framing: dict[str, Any]) -> None:
    with (
        serve(persona="api", api_key=KEY, token_rate=1000, seed=7, **framing) as server,
        ApiClient(server.openai_base_url, KEY) as client,
    ):
        pieces = list(client.stream_chat(MESSAGES, model="opus-5.5", max_tokens=12, ignore_eos=True))
        (record,) = server.ledger()
    result = pieces[-1].result
    assert result is not None and result.usage.output_tokens == 12 == record["completion_tokens"]
    assert "".join(p.text for p in pieces[:-1]) == result.text and len(pieces) == 13
    # seeded: every framing carries the same words
    assert result.text == _reference_text()


_REFERENCE: list[str] = []


def _reference_text() -> str:
    if not _REFERENCE:
        with serve(persona="api", api_key=KEY, token_rate=1000, seed=7) as server:
            reply = ApiClient(server.openai_base_url, KEY).chat(
                MESSAGES, model="opus-5.5", max_tokens=12, ignore_eos=True
            )
        _REFERENCE.append(reply.text)
    return _REFERENCE[0]


SLOW: dict[str, Any] = {"persona": "api", "api_key": KEY, "token_rate": 20}  # 200 tokens would take 10 s


def _ended_early(server_ledger: list[dict[str, object]], started: float) -> None:
    (record,) = server_ledger
    assert record["error"] == "client disconnected"
    assert isinstance(record["completion_tokens"], int) and record["completion_tokens"] < 100
    assert isinstance(record["finished"], float) and record["finished"] - started < 6  # far before the 10 s answer


def test_leaving_a_sync_stream_early_closes_its_connection() -> None:
    with serve(**SLOW) as server, ApiClient(server.openai_base_url, KEY, prices=Prices(4, 20)) as client:
        started = time.time()
        with client.stream_chat(MESSAGES, model="opus-5.5", max_tokens=200, ignore_eos=True) as stream:
            first = next(p for p in stream if p.text)
        assert first.text
        _ended_early(server.ledger(settle=5), started)


def test_leaving_an_async_stream_early_closes_its_connection() -> None:
    async def run(server: RunningServer) -> list[dict[str, object]]:
        async with AsyncApiClient(
            server.openai_base_url, KEY, prices=Prices(4, 20), timeouts=Timeouts(total=30)
        ) as client:
            async with client.stream_chat(MESSAGES, model="opus-5.5", max_tokens=200, ignore_eos=True) as stream:
                async for piece in stream:
                    if piece.text:
                        break
            return await asyncio.to_thread(server.ledger, 5)  # the client, and its pool, still open

    with serve(**SLOW) as server:
        started = time.time()
        _ended_early(asyncio.run(run(server)), started)
