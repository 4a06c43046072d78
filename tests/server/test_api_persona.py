"""The hosted-API persona through the real openai client and through starter/api_client.py."""

from __future__ import annotations

import asyncio
import time
from typing import Any

import httpx
import openai
import pytest
from api_client import (
    ApiClient,
    ApiClientError,
    ApiConnectionError,
    ApiError,
    ApiServerError,
    ApiStatusError,
    ApiStreamError,
    ApiTimeout,
    AsyncApiClient,
    ChatResult,
    Prices,
    StreamPiece,
    Timeouts,
)
from conftest import FakeServer

from fake_server import RunningServer, serve, tokenizer

KEY = "sk-test-0123456789"
PROMPTS = [
    "What is a KV cache?",
    "Summarise continuous batching in one line.",
    "Name three GPU metrics.",
    "Why does prefill cost time?",
    "What is TTFT?",
    "Define throughput.",
]


@pytest.fixture
def api(fake_server: FakeServer) -> RunningServer:
    return fake_server(persona="api", api_key=KEY, token_rate=1000)


def _prompt_tokens(text: str) -> int:
    return tokenizer.count(tokenizer.render_chat([{"role": "user", "content": text}]))


def test_auth_required_and_checked(api: RunningServer) -> None:
    bare = httpx.post(
        api.openai_base_url + "/chat/completions",
        json={"model": "opus-5.5", "messages": [{"role": "user", "content": "x"}]},
    )
    assert bare.status_code == 401 and bare.json()["error"]["code"] == "missing_api_key"
    client = openai.OpenAI(base_url=api.openai_base_url, api_key="sk-wrong-key-000000", max_retries=0)
    with pytest.raises(openai.AuthenticationError) as info:
        client.chat.completions.create(model="opus-5.5", messages=[{"role": "user", "content": "x"}])
    assert info.value.status_code == 401 and KEY not in info.value.message
    good = openai.OpenAI(base_url=api.openai_base_url, api_key=KEY)
    good.chat.completions.create(model="opus-5.5", messages=[{"role": "user", "content": "x"}], max_tokens=1)
    assert [r["status"] for r in api.ledger()] == [401, 401, 200]


def test_costs_match_the_price_table_and_the_ledger(api: RunningServer) -> None:
    """Six prompts with known token counts, costed at $4 / $20 per million, three ways."""
    client = openai.OpenAI(base_url=api.openai_base_url, api_key=KEY)
    stub = ApiClient(api.openai_base_url, KEY)
    expected, reported = 0.0, 0.0
    for i, prompt in enumerate(PROMPTS):
        out = 10 + i
        expected += (_prompt_tokens(prompt) * 4 + out * 20) / 1e6
        if i % 2:
            reply = stub.chat([{"role": "user", "content": prompt}], model="opus-5.5", max_tokens=out, ignore_eos=True)
            assert reply.usage.output_tokens == out
            reported += reply.cost_usd
        else:
            stream = client.chat.completions.create(
                model="opus-5.5",
                messages=[{"role": "user", "content": prompt}],
                max_tokens=out,
                stream=True,
                extra_body={"ignore_eos": True},
            )
            usage = next(c.usage for c in stream if c.usage)  # usage comes on every API stream, unasked
            reported += (usage.prompt_tokens * 4 + usage.completion_tokens * 20) / 1e6
    ledger_total = sum(r["cost_usd"] for r in api.ledger())
    assert reported == pytest.approx(expected, abs=1e-12)
    assert ledger_total == pytest.approx(expected, abs=1e-12)
    stub.close()


def test_prices_are_published_and_settable(fake_server: FakeServer) -> None:
    server = fake_server(persona="api", price_input=3.0, price_output=15.0)
    pricing = httpx.get(server.openai_base_url + "/models").json()["data"][0]["pricing"]
    assert pricing == {"input_per_million_usd": 3.0, "output_per_million_usd": 15.0}
    with ApiClient(server.openai_base_url, "any-key") as stub:
        reply = stub.chat([{"role": "user", "content": "hi"}], model="opus-5.5", max_tokens=5, ignore_eos=True)
    assert reply.cost_usd == pytest.approx((reply.usage.input_tokens * 3 + 5 * 15) / 1e6)


def test_request_and_token_rate_limits_answer_429_with_retry_after(fake_server: FakeServer) -> None:
    server = fake_server(persona="api", rpm=3, token_rate=1000)
    client = openai.OpenAI(base_url=server.openai_base_url, api_key="k", max_retries=0)
    for _ in range(3):
        client.chat.completions.create(model="opus-5.5", messages=[{"role": "user", "content": "x"}], max_tokens=1)
    with pytest.raises(openai.RateLimitError) as info:
        client.chat.completions.create(model="opus-5.5", messages=[{"role": "user", "content": "x"}], max_tokens=1)
    assert 1 <= int(info.value.response.headers["retry-after"]) <= 60
    assert isinstance(info.value.body, dict)  # the error's JSON object
    assert info.value.body["code"] == "rate_limit_exceeded" and info.value.body["type"] == "requests"
    # another key has its own budget, and a reset forgets every window
    other = openai.OpenAI(base_url=server.openai_base_url, api_key="other", max_retries=0)
    other.chat.completions.create(model="opus-5.5", messages=[{"role": "user", "content": "x"}], max_tokens=1)
    server.reset()
    client.chat.completions.create(model="opus-5.5", messages=[{"role": "user", "content": "x"}], max_tokens=1)

    tokens = fake_server(persona="api", tpm=100, token_rate=1000)
    with ApiClient(tokens.openai_base_url, "k") as stub:
        stub.chat([{"role": "user", "content": "x"}], model="opus-5.5", max_tokens=60)  # 8 + 60 tokens
        with pytest.raises(ApiClientError) as limited:
            stub.chat([{"role": "user", "content": "x"}], model="opus-5.5", max_tokens=60)
    assert limited.value.status == 429 and limited.value.retry_after and limited.value.body["error"]["type"] == "tokens"


@pytest.mark.parametrize(
    ("fault", "error", "status"),
    [
        ({"kind": "http_error", "status": 404}, ApiClientError, 404),
        ({"kind": "http_error", "status": 400, "message": "bad"}, ApiClientError, 400),
        ({"kind": "http_error", "status": 500}, ApiServerError, 500),
        ({"kind": "http_error", "status": 503}, ApiServerError, 503),
        ({"kind": "stream_error", "after_tokens": 2}, ApiStreamError, None),
        ({"kind": "cut", "after_tokens": 2}, ApiStreamError, None),
        ({"kind": "no_done", "after_tokens": 2}, ApiStreamError, None),
        ({"kind": "stall_before_headers", "seconds": 10}, ApiTimeout, None),
    ],
)
def test_each_stub_exception_kind_is_raised_by_the_matching_fault(
    fake_server: FakeServer, fault: dict[str, Any], error: type[ApiError], status: int | None
) -> None:
    server = fake_server(persona="api", faults=[fault], token_rate=1000)
    # first_byte well above a loopback answer's (beside the busy suite one took over 1 s), well below the stall
    stub = ApiClient(
        server.openai_base_url, "k", prices=Prices(4, 20), timeouts=Timeouts(connect=2, first_byte=4, total=12)
    )
    with pytest.raises(error) as info:
        list(stub.stream_chat([{"role": "user", "content": "x"}], model="opus-5.5", max_tokens=8))
    if status is not None:
        assert isinstance(info.value, ApiStatusError) and info.value.status == status
    if error is ApiTimeout:
        assert isinstance(info.value, ApiTimeout) and info.value.phase == "first_byte"
    stub.close()


def test_connection_error_when_nothing_listens() -> None:
    with serve(port=0, persona="api") as server:
        url = server.openai_base_url
    with ApiClient(url, "k", prices=Prices(4, 20)) as stub, pytest.raises(ApiConnectionError):
        stub.chat([{"role": "user", "content": "x"}], model="opus-5.5")


def test_async_client_streams_and_costs(api: RunningServer) -> None:
    async def run() -> list[StreamPiece]:
        async with AsyncApiClient(api.openai_base_url, KEY) as client:
            pieces = [
                p
                async for p in client.stream_chat(
                    [{"role": "user", "content": "hi"}], model="opus-5.5", max_tokens=6, ignore_eos=True
                )
            ]
            return pieces

    pieces = asyncio.run(run())
    result = pieces[-1].result
    assert result is not None  # the last piece is the whole result
    assert "".join(p.text for p in pieces[:-1]) == result.text and tokenizer.count(result.text) == 6
    assert result.ttft_s is not None and result.ttft_s <= result.latency_s
    assert result.cost_usd == pytest.approx((result.usage.input_tokens * 4 + 6 * 20) / 1e6)


def test_after_the_first_event_only_total_bounds_a_stream_as_the_gateway_contract_says(fake_server: FakeServer) -> None:
    """A pause longer than first_byte after the first event is waited for; one past total is a total timeout.
    first_byte is generous (1.5 s, the pause twice that): on a busy machine a first event can take a second."""
    pauses = fake_server(persona="api", token_rate=1000, faults=[{"kind": "stall", "after_tokens": 2, "seconds": 3.0}])
    message = [{"role": "user", "content": "x"}]
    within = Timeouts(connect=1, first_byte=1.5, total=8)  # the pause is twice first_byte
    past = Timeouts(connect=1, first_byte=1.5, total=2.0)
    with ApiClient(pauses.openai_base_url, "k", prices=Prices(4, 20), timeouts=within) as stub:
        pieces = list(stub.stream_chat(message, model="opus-5.5", max_tokens=8, ignore_eos=True))
        assert pieces[-1].result is not None and pieces[-1].result.usage.output_tokens == 8
    with ApiClient(pauses.openai_base_url, "k", prices=Prices(4, 20), timeouts=past) as stub:
        start = time.perf_counter()
        with pytest.raises(ApiTimeout) as info:
            list(stub.stream_chat(message, model="opus-5.5", max_tokens=8, ignore_eos=True))
        assert info.value.phase == "total" and 1.9 < time.perf_counter() - start < 2.9  # the pause ends at 3 s

    async def stream(timeouts: Timeouts) -> list[StreamPiece]:
        async with (
            AsyncApiClient(pauses.openai_base_url, "k", prices=Prices(4, 20), timeouts=timeouts) as client,
            client.stream_chat(message, model="opus-5.5", max_tokens=8, ignore_eos=True) as pieces,
        ):
            return [p async for p in pieces]

    assert asyncio.run(stream(within))[-1].result is not None
    start = time.perf_counter()
    with pytest.raises(ApiTimeout) as info:
        asyncio.run(stream(past))
    assert info.value.phase == "total" and 1.9 < time.perf_counter() - start < 2.9


def test_timeouts_name_the_limit_that_fired(fake_server: FakeServer) -> None:
    silent = fake_server(persona="api", token_rate=1000, faults=[{"kind": "stall_after_headers", "seconds": 3}])
    stub = ApiClient(
        silent.openai_base_url, "k", prices=Prices(4, 20), timeouts=Timeouts(connect=1, first_byte=0.3, total=10)
    )
    start = time.perf_counter()
    with pytest.raises(ApiTimeout) as info:
        list(stub.stream_chat([{"role": "user", "content": "x"}], model="opus-5.5", max_tokens=8))
    assert info.value.phase == "first_byte" and time.perf_counter() - start < 2
    slow = fake_server(persona="api", token_rate=10)
    whole = ApiClient(
        slow.openai_base_url, "k", prices=Prices(4, 20), timeouts=Timeouts(connect=1, first_byte=5, total=0.5)
    )
    with pytest.raises(ApiTimeout) as info:
        whole.chat([{"role": "user", "content": "x"}], model="opus-5.5", max_tokens=50, ignore_eos=True)
    assert info.value.phase == "total"
    stub.close()
    whole.close()


def test_a_whole_answer_slower_than_first_byte_times_out_as_the_gateway_contract_says(fake_server: FakeServer) -> None:
    """Non-streamed, the first byte is the whole answer: `first_byte` bounds it, in both clients."""
    slow = fake_server(persona="api", token_rate=10)  # 50 tokens: about 5 s
    timeouts = Timeouts(connect=1, first_byte=0.4, total=30)
    with ApiClient(slow.openai_base_url, "k", prices=Prices(4, 20), timeouts=timeouts) as client:
        start = time.perf_counter()
        with pytest.raises(ApiTimeout) as info:
            client.chat([{"role": "user", "content": "x"}], model="opus-5.5", max_tokens=50, ignore_eos=True)
        assert info.value.phase == "first_byte" and time.perf_counter() - start < 3

    async def whole() -> None:
        async with AsyncApiClient(slow.openai_base_url, "k", prices=Prices(4, 20), timeouts=timeouts) as client:
            await client.chat([{"role": "user", "content": "x"}], model="opus-5.5", max_tokens=50, ignore_eos=True)

    start = time.perf_counter()
    with pytest.raises(ApiTimeout) as info:
        asyncio.run(whole())
    assert info.value.phase == "first_byte" and time.perf_counter() - start < 3
    # Well within first_byte: answered. 8 tokens take ~10 ms; the bound is generous, as beside a busy
    # test suite a whole answer once took longer than the 0.4 s above.
    fast = fake_server(persona="api", token_rate=1000)
    roomy = Timeouts(connect=1, first_byte=3, total=30)
    with ApiClient(fast.openai_base_url, "k", prices=Prices(4, 20), timeouts=roomy) as client:
        reply = client.chat([{"role": "user", "content": "x"}], model="opus-5.5", max_tokens=8, ignore_eos=True)
        assert reply.usage.output_tokens == 8


def test_a_cut_after_the_answer_started_is_a_stream_error_streamed_or_not(fake_server: FakeServer) -> None:
    server = fake_server(persona="api", token_rate=1000, faults=[{"kind": "cut", "after_tokens": 2}])
    with ApiClient(server.openai_base_url, "k", prices=Prices(4, 20)) as stub:
        with pytest.raises(ApiStreamError):
            stub.chat([{"role": "user", "content": "x"}], model="opus-5.5", max_tokens=8)
        with pytest.raises(ApiStreamError):
            list(stub.stream_chat([{"role": "user", "content": "x"}], model="opus-5.5", max_tokens=8))


@pytest.mark.slow
def test_many_calls_at_once_never_wait_for_a_connection(fake_server: FakeServer) -> None:
    """150 calls of about 10 s each: all of them reach the server before the first one ends, so none
    waited for another's connection. Ordering, not timing: the machine may be loaded (opening 150
    connections beside the whole suite took over 5 s there)."""
    calls = 150
    server = fake_server(persona="api", api_key=KEY, token_rate=10)  # 100 tokens: about 10 s each

    async def run() -> list[ChatResult]:
        async with AsyncApiClient(
            server.openai_base_url, KEY, timeouts=Timeouts(connect=10, first_byte=30, total=60)
        ) as client:
            return await asyncio.gather(
                *(
                    client.chat([{"role": "user", "content": "x"}], model="opus-5.5", max_tokens=100, ignore_eos=True)
                    for _ in range(calls)
                )
            )

    results = asyncio.run(run())
    assert len(results) == calls and all(r.usage.output_tokens == 100 for r in results)
    records = server.ledger()
    assert len(records) == calls
    assert max(r["arrival"] for r in records) < min(r["finished"] for r in records)


def test_authentication_comes_before_any_other_check(api: RunningServer) -> None:
    for body in (b"{not json", b'{"model": "nope", "messages": [{"role": "user", "content": "x"}]}'):
        r = httpx.post(
            api.openai_base_url + "/chat/completions", content=body, headers={"content-type": "application/json"}
        )
        assert r.status_code == 401


def test_a_stream_cut_half_way_says_what_it_already_cost(fake_server: FakeServer) -> None:
    server = fake_server(persona="api", token_rate=1000, faults=[{"kind": "cut", "after_tokens": 4}])
    with ApiClient(server.openai_base_url, "k", prices=Prices(4, 20)) as stub, pytest.raises(ApiStreamError) as info:
        list(stub.stream_chat([{"role": "user", "content": "x"}], model="opus-5.5", max_tokens=12))
    prompt = _prompt_tokens("x")
    assert info.value.usage is not None  # what the last chunk before the cut reported
    assert info.value.usage.input_tokens == prompt and info.value.usage.output_tokens == 4
    assert info.value.cost_usd == pytest.approx((prompt * 4 + 4 * 20) / 1e6)
    record = server.ledger()[0]
    assert record["completion_tokens"] - 4 in (0, 1) and record["cost_usd"] >= info.value.cost_usd
