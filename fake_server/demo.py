"""`make demo`: the fake server at work, in twenty lines of output.

Starts the `slot-saturation` scenario (2 slots), sends 6 streaming chats at once with httpx (the
kit's base dependencies are enough), and prints what each client saw next to what the ledger says
happened, then the queue and cache figures from `/metrics`.
"""

from __future__ import annotations

import asyncio
import json
import time

import httpx

from fake_server.hosting.launch import serve

CONCURRENCY = 6


async def _one(client: httpx.AsyncClient, i: int) -> dict[str, float | int | str]:
    """One streamed chat, read with httpx alone (the demo runs on the kit's base dependencies)."""
    start = time.time()
    first = None
    tokens = 0
    rid = ""
    body = {
        "model": "fake-model",
        "messages": [{"role": "user", "content": f"Question {i}: what is a KV cache?"}],
        "max_tokens": 24,
        "stream": True,
        "stream_options": {"include_usage": True},
    }
    async with client.stream("POST", "/chat/completions", json=body) as response:
        async for line in response.aiter_lines():
            if not line.startswith("data:") or line[5:].strip() == "[DONE]":
                continue
            chunk = json.loads(line[5:])
            rid = chunk.get("id", rid)
            choices = chunk.get("choices") or []
            if choices and choices[0].get("delta", {}).get("content") and first is None:
                first = time.time()
            if chunk.get("usage"):
                tokens = chunk["usage"]["completion_tokens"]
    return {"id": rid, "start": start, "ttft": (first or float("nan")) - start, "tokens": tokens}


async def _run(base_url: str) -> list[dict[str, float | int | str]]:
    async with httpx.AsyncClient(base_url=base_url, timeout=30) as client:
        return await asyncio.gather(*(_one(client, i) for i in range(CONCURRENCY)))


def main() -> None:
    with serve(scenario="slot-saturation") as server:
        print(f"fake server (scenario slot-saturation: 2 slots, 200 tokens/s) at {server.base_url}")
        print(f"sending {CONCURRENCY} streaming chats at once...\n")
        seen = asyncio.run(_run(server.openai_base_url))
        ledger = {r["id"]: r for r in server.ledger()}
        metrics = [
            line
            for line in server.metrics().splitlines()
            if line.startswith(
                (
                    "vllm:num_requests",
                    "vllm:prompt_tokens_total",
                    "vllm:generation_tokens_total",
                    "vllm:time_to_first_token_seconds_count",
                    "vllm:request_queue_time_seconds_sum",
                )
            )
        ]
    print(f"{'request':>7} {'client TTFT ms':>15} {'ledger queue ms':>16} {'ledger TTFT ms':>15} {'tokens':>7}")
    for record in sorted(ledger.values(), key=lambda r: r["number"]):
        client_view = next(c for c in seen if c["id"] == record["id"])
        ledger_ttft = (record["first_content"] - record["arrival"]) * 1e3
        print(
            f"{record['number']:>7} {float(client_view['ttft']) * 1e3:>15.1f} {record['queue_wait'] * 1e3:>16.1f} "
            f"{ledger_ttft:>15.1f} {record['completion_tokens']:>7}"
        )
    print("\nTwo requests got the two slots at once; the rest waited in the queue, so their TTFT grew.")
    print("Client TTFT also holds the client's own time (connection set-up, parsing); the ledger's does not.")
    print("\nfrom /metrics:")
    for line in metrics:
        print("  " + line)


if __name__ == "__main__":
    main()
