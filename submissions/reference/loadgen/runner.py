"""N streamed requests, at most C in flight: C workers, each with its own warm connection.

Bounded concurrency is a pool of C workers that take the next request as soon as they are free.
The wait for a worker is the load generator's own queue, not the server's, so it is recorded apart
(`slot_wait_s`) and never added to TTFT (client.py starts the clock when the request is written).

Each worker has its own httpx client holding one connection, opened before the run with
`GET /models` (as benchmark clients check the server first). So no request ever waits for a
connection, and no TCP connect happens inside the run. One shared client with a pool of C
connections would promise the same, but httpcore's pool scans every connection for every request
it places (a test for expiry on each idle socket, then a count of idle ones per idle one); with 64
warm connections a burst of 64 requests took 0.5 s just to leave the client, and the first tokens
of the early requests waited unread behind it. Proxies from the environment are ignored: the
figures must be the server's, not a proxy's.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import resource
import ssl
import time
from collections.abc import Iterator

import httpx

from .client import Clock, send_one
from .config import LoadConfig
from .prompts import make_prompt
from .results import RequestResult, RunResult

__all__ = ["run_load", "request_body"]

_WARM_UP_TIMEOUT_S = 5.0


def request_body(config: LoadConfig, index: int) -> dict[str, object]:
    """The plain OpenAI streaming chat request for request `index`."""
    return {
        "model": config.model,
        "messages": [{"role": "user", "content": make_prompt(index, config.prompt_tokens, config.seed)}],
        "max_tokens": config.max_tokens,
        "stream": True,
        "stream_options": {"include_usage": True},
    }


async def run_load(config: LoadConfig) -> RunResult:
    """Send every request of the run and return each one's result, in index order."""
    workers = min(config.concurrency, config.requests)
    _allow_open_files(workers + 64)
    async with contextlib.AsyncExitStack() as stack:
        tls = httpx.create_ssl_context()  # one for all: httpx builds one per client otherwise, ~20 ms each
        clients = [await stack.enter_async_context(_client(config, tls)) for _ in range(workers)]
        await asyncio.gather(*(_warm_up(client, config) for client in clients))
        bodies = [json.dumps(request_body(config, i)).encode() for i in range(config.requests)]
        results: list[RequestResult | None] = [None] * config.requests
        queue: Iterator[int] = iter(range(config.requests))
        clock = Clock()
        run_start = time.perf_counter()

        async def worker(client: httpx.AsyncClient) -> None:
            for index in queue:  # shared: each index goes to whichever worker is free first
                slot_wait = time.perf_counter() - run_start
                request = client.build_request("POST", config.chat_url, content=bodies[index],
                                               headers={"Content-Type": "application/json"})
                results[index] = await send_one(client, request, index, clock, config.timeouts.request_s, slot_wait)

        await asyncio.gather(*(worker(client) for client in clients))
    return RunResult(config, [r for r in results if r is not None])


def _client(config: LoadConfig, tls: ssl.SSLContext) -> httpx.AsyncClient:
    t = config.timeouts
    # Compression would hold SSE frames back in the server's compressor and cost a decoder here.
    headers = {"Accept": "text/event-stream", "Accept-Encoding": "identity"}
    if config.api_key:
        headers["Authorization"] = f"Bearer {config.api_key}"
    return httpx.AsyncClient(
        timeout=httpx.Timeout(connect=t.connect_s, read=t.read_s, write=t.read_s, pool=t.connect_s),
        limits=httpx.Limits(max_connections=1, max_keepalive_connections=1),
        headers=headers, trust_env=False, verify=tls,
    )


async def _warm_up(client: httpx.AsyncClient, config: LoadConfig) -> None:
    """Open the worker's connection with `GET /models`; a failure is left for the run to meet and report."""
    url = config.base_url.rstrip("/") + "/models"
    with contextlib.suppress(httpx.HTTPError):
        await client.get(url, timeout=min(config.timeouts.connect_s, _WARM_UP_TIMEOUT_S))


def _allow_open_files(needed: int) -> None:
    """Raise the soft limit on open files towards the hard one when a high concurrency needs more
    sockets than the default 1,024, so connections fail for the server's reasons, not ours."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft != resource.RLIM_INFINITY and soft < needed:
        target = needed if hard == resource.RLIM_INFINITY else min(needed, hard)
        with contextlib.suppress(ValueError, OSError):
            resource.setrlimit(resource.RLIMIT_NOFILE, (target, hard))
