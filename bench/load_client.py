"""A load client light enough not to be the bottleneck: raw HTTP/1.1 over asyncio protocols.

It opens N connections at once, sends one streaming chat request on each, and for every
`data:` frame records the time the bytes carrying it arrived. It parses nothing but frame
boundaries and the response id, so its cost per frame is a few microseconds.

    python -m bench.load_client --url http://127.0.0.1:8000 --streams 256 --max-tokens 40
prints one JSON object: per stream, its id and frame arrival times.
"""

from __future__ import annotations

import asyncio
import functools
import json
import re
import time
from urllib.parse import urlsplit

import click

from fake_server.hosting.launch import new_loop

_ID = re.compile(rb'"id":\s*"([^"]+)"')


class _Stream(asyncio.Protocol):
    def __init__(self, request: bytes, done: asyncio.Future[None]) -> None:
        self.request = request
        self.done = done
        self.times: list[float] = []
        self.id: str | None = None
        self.tail = b""

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        assert isinstance(transport, asyncio.WriteTransport)  # a TCP connection's transport writes
        transport.write(self.request)
        self.transport = transport

    def data_received(self, data: bytes) -> None:
        now = time.time()
        data = self.tail + data
        frames = data.count(b"data:")
        self.times.extend([now] * frames)
        if self.id is None:
            match = _ID.search(data)
            if match:
                self.id = match.group(1).decode()
        self.tail = data[-4:]  # shorter than "data:", so no frame is counted twice
        if b"[DONE]" in data:
            self.transport.close()

    def connection_lost(self, exc: Exception | None) -> None:
        if not self.done.done():
            self.done.set_result(None)


async def run(url: str, streams: int, max_tokens: int, model: str, timeout: float) -> list[dict[str, object]]:
    parts = urlsplit(url)
    host, port = parts.hostname, parts.port
    assert host is not None and port is not None, f"{url}: not http://HOST:PORT"
    body = json.dumps(
        {
            "model": model,
            "messages": [{"role": "user", "content": "Tell me a story."}],
            "max_tokens": max_tokens,
            "ignore_eos": True,
            "stream": True,
        }
    ).encode()
    request = (
        f"POST /v1/chat/completions HTTP/1.1\r\nHost: {parts.hostname}\r\nContent-Type: application/json\r\n"
        f"Content-Length: {len(body)}\r\nConnection: close\r\n\r\n"
    ).encode() + body
    loop = asyncio.get_running_loop()
    protocols: list[_Stream] = []
    waits: list[asyncio.Future[None]] = []
    for _ in range(streams):
        done: asyncio.Future[None] = loop.create_future()
        _, proto = await loop.create_connection(functools.partial(_Stream, request, done), host, port)
        protocols.append(proto)
        waits.append(done)
    await asyncio.wait_for(asyncio.gather(*waits), timeout)
    return [{"id": p.id, "times": p.times} for p in protocols]


@click.command()
@click.option("--url", required=True)
@click.option("--streams", default=256, type=click.IntRange(1, 5000))
@click.option("--max-tokens", default=40, type=click.IntRange(1, 10000))
@click.option("--model", default="fake-model")
@click.option("--timeout", default=120.0, type=float)
def main(url: str, streams: int, max_tokens: int, model: str, timeout: float) -> None:
    loop = new_loop()
    result = loop.run_until_complete(run(url, streams, max_tokens, model, timeout))
    print(json.dumps(result))


if __name__ == "__main__":
    main()
