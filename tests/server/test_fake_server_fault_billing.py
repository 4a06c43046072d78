"""Faults act at generated token k in the engine, so what is billed is exactly what the fault let
through: usage on the wire, the ledger's completion_tokens and cost_usd, at 1,000 tok/s with
dozens of concurrent streams whose client shares the server's process (so the engine runs late)."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import httpx
from conftest import sse_events

from fake_server import serve

STREAMS = 48
MAX_TOKENS = 40
FAULTS = [
    {"kind": "cut", "after_tokens": 4, "requests": list(range(1, STREAMS + 1, 4))},
    {"kind": "no_done", "after_tokens": 7, "requests": list(range(2, STREAMS + 1, 4))},
    {"kind": "stream_error", "after_tokens": 3, "requests": list(range(3, STREAMS + 1, 4))},
]
EXPECTED = {"cut": 4, "no_done": 7, "stream_error": 3, None: MAX_TOKENS}


async def _one(client: httpx.AsyncClient, url: str, i: int) -> dict[str, Any]:
    body = {
        "model": "fake-model",
        "messages": [{"role": "user", "content": f"bill me {i}"}],
        "max_tokens": MAX_TOKENS,
        "ignore_eos": True,
        "stream": True,
        "stream_options": {"include_usage": True, "continuous_usage_stats": True},
    }
    raw = b""
    try:
        async with client.stream("POST", url, json=body) as r:
            async for part in r.aiter_raw():
                raw += part
    except httpx.RemoteProtocolError:
        pass  # the cut fault closes the connection mid-body
    events = sse_events(raw)
    chunks = [json.loads(data) for data in events if data.startswith("{")]
    ids = {c["id"] for c in chunks if "id" in c}
    content = [c for c in chunks if c.get("choices") and c["choices"][0]["delta"].get("content")]
    usages = [c["usage"]["completion_tokens"] for c in chunks if c.get("usage")]
    return {
        "id": ids.pop() if len(ids) == 1 else None,
        "content_chunks": len(content),
        "last_usage": usages[-1] if usages else None,
        "done": "[DONE]" in events,
    }


async def _burst(base_url: str) -> list[dict[str, Any]]:
    limits = httpx.Limits(max_connections=STREAMS, max_keepalive_connections=STREAMS)
    async with httpx.AsyncClient(timeout=60, limits=limits, headers={"Authorization": "Bearer sk-test"}) as client:
        url = base_url + "/v1/chat/completions"
        return await asyncio.gather(*(_one(client, url, i) for i in range(STREAMS)))


def _run(**settings: Any) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    with serve(token_rate=1000, max_num_seqs=64, faults=FAULTS, **settings) as server:
        seen = asyncio.run(_burst(server.base_url))
        return seen, server.ledger()


def _check(seen: list[dict[str, Any]], records: list[dict[str, Any]]) -> list[tuple[int, int, str]]:
    by_id = {r["id"]: r for r in records}
    assert len(records) == STREAMS and all(s["id"] in by_id for s in seen)
    assert max(r["step_lag_max"] for r in records) > 0  # the engine did run late
    outcome = []
    for s in seen:
        r = by_id[s["id"]]
        kind = r["fault"]["kind"] if r["fault"] else None
        k = EXPECTED[kind]
        assert s["content_chunks"] == k, (kind, s)
        assert s["last_usage"] == k, (kind, s)
        assert r["completion_tokens"] == k and sum(c[2] for c in r["chunks"]) == k, (kind, r)
        assert s["done"] is (kind in (None, "stream_error"))
        if kind is not None:
            assert r["fault"]["applied"]
        outcome.append((r["number"], r["completion_tokens"], r["finish_reason"]))
    return sorted(outcome)


def test_billed_tokens_are_exactly_what_each_fault_let_through_under_load() -> None:
    first = _check(*_run())
    second = _check(*_run())
    assert first == second  # deterministic by request number, whatever the timing
    assert {reason for _, _, reason in first} == {"abort", "error", "length"}


def test_the_api_persona_prices_exactly_the_tokens_let_through() -> None:
    seen, records = _run(persona="api", served_model_name=["fake-model"], price_input=3.0, price_output=15.0)
    for r in records:
        k = EXPECTED[r["fault"]["kind"] if r["fault"] else None]
        assert r["completion_tokens"] == k
        expected_cost = (r["prompt_tokens"] * 3.0 + k * 15.0) / 1e6
        assert abs(r["cost_usd"] - expected_cost) < 1e-12, r
    _check(seen, records)
