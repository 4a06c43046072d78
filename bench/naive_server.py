"""The baseline for `bench.fidelity`: the obvious fake server, one sleep per token per request.

Starlette + sse-starlette, no batching, no ledger: each stream is a generator that sleeps the set
gap and yields the next chunk, as most mock OpenAI servers do. It exists only to be measured
against the real fake server under the same load.

    python -m bench.naive_server --token-rate 20 --port 0
"""

from __future__ import annotations

import asyncio
import json
import sys
import time
from collections.abc import AsyncIterator

import click
import uvicorn
from sse_starlette.sse import EventSourceResponse
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.routing import Route

from fake_server.hosting.launch import bind, new_loop


def make_app(token_rate: float) -> Starlette:
    gap = 1.0 / token_rate

    async def chat(request: Request) -> EventSourceResponse:
        body = await request.json()
        max_tokens = int(body.get("max_tokens") or 16)
        cid = f"chatcmpl-{time.time_ns()}"

        async def events() -> AsyncIterator[str]:
            base = {
                "id": cid,
                "object": "chat.completion.chunk",
                "created": int(time.time()),
                "model": body.get("model"),
            }
            yield json.dumps({**base, "choices": [{"index": 0, "delta": {"role": "assistant", "content": ""}}]})
            for i in range(max_tokens):
                await asyncio.sleep(gap)
                finish = "length" if i == max_tokens - 1 else None
                yield json.dumps(
                    {**base, "choices": [{"index": 0, "delta": {"content": " word"}, "finish_reason": finish}]}
                )
            yield "[DONE]"

        return EventSourceResponse(events(), ping=15)

    return Starlette(routes=[Route("/v1/chat/completions", chat, methods=["POST"])])


@click.command()
@click.option("--port", default=0, type=int)
@click.option("--token-rate", default=20.0, type=float)
def main(port: int, token_rate: float) -> None:
    sock = bind("127.0.0.1", port)
    config = uvicorn.Config(make_app(token_rate), log_level="warning", access_log=False, backlog=4096)
    server = uvicorn.Server(config)
    print(f"naive server on http://127.0.0.1:{sock.getsockname()[1]}", flush=True)
    sys.stdout.flush()
    loop = new_loop()
    asyncio.set_event_loop(loop)
    loop.run_until_complete(server.serve(sockets=[sock]))


if __name__ == "__main__":
    main()
