"""The wire format, read by the real openai client and from the raw SSE bytes."""

from __future__ import annotations

import json

import httpx
import openai
import pytest
from conftest import FakeServer, chat_body, json_events, stream_chat
from openai.types import CompletionUsage

from fake_server import RunningServer, tokenizer


@pytest.fixture
def server(fake_server: FakeServer) -> RunningServer:
    return fake_server(scenario="baseline")


def test_openai_client_streams_role_chunk_then_tokens_then_finish_then_usage(server: RunningServer) -> None:
    client = openai.OpenAI(base_url=server.openai_base_url, api_key="unused")
    chunks = list(
        client.chat.completions.create(
            model="fake-model",
            messages=[{"role": "user", "content": "Hello"}],
            max_tokens=6,
            stream=True,
            stream_options={"include_usage": True},
        )
    )
    first, *middle, finish, usage = chunks
    assert first.choices[0].delta.role == "assistant" and first.choices[0].delta.content == ""
    assert all(c.choices[0].delta.content and c.choices[0].finish_reason is None for c in middle)
    assert finish.choices[0].finish_reason == "length" and finish.choices[0].delta.content
    assert usage.choices == []
    assert usage.usage is not None  # the last chunk is the usage one (include_usage)
    assert usage.usage.completion_tokens == 6 == len(middle) + 1
    assert usage.usage.prompt_tokens == tokenizer.count(tokenizer.render_chat([{"role": "user", "content": "Hello"}]))
    assert len({c.id for c in chunks}) == 1


def test_raw_bytes_match_vllm_field_for_field(server: RunningServer) -> None:
    status, events = stream_chat(server.base_url, max_tokens=3, stream_options={"include_usage": True})
    assert status == 200 and events[-1] == "[DONE]"
    role, t1, _t2, last, usage = json_events(events)
    assert events[0].startswith('{"id":"chatcmpl-')
    assert role["object"] == "chat.completion.chunk"
    assert role["choices"] == [
        {"index": 0, "delta": {"role": "assistant", "content": ""}, "logprobs": None, "finish_reason": None}
    ]
    assert set(t1["choices"][0]) == {"index", "delta", "logprobs", "finish_reason"}
    assert list(t1["choices"][0]["delta"]) == ["content"]
    assert last["choices"][0]["finish_reason"] == "length" and last["choices"][0]["stop_reason"] is None
    assert usage["choices"] == [] and usage["usage"]["total_tokens"] == usage["usage"]["prompt_tokens"] + 3
    assert usage["usage"]["prompt_tokens_details"] == {"cached_tokens": 0}


def test_natural_end_is_stop_with_an_empty_end_of_sequence_token(fake_server: FakeServer) -> None:
    server = fake_server(token_rate=500, output_len_min=4, output_len_max=4)
    _status, events = stream_chat(server.base_url, max_tokens=None, stream_options={"include_usage": True})
    chunks = json_events(events)
    content = [c for c in chunks[1:-1]]
    assert content[-1]["choices"][0] == {
        "index": 0,
        "delta": {"content": ""},
        "logprobs": None,
        "finish_reason": "stop",
        "stop_reason": None,
    }
    # four words, then the end-of-sequence token, which usage counts like vLLM does
    assert sum(1 for c in content if c["choices"][0]["delta"]["content"]) == 4
    assert chunks[-1]["usage"]["completion_tokens"] == 5


def test_non_streaming_response_and_completions_endpoint(server: RunningServer) -> None:
    client = openai.OpenAI(base_url=server.openai_base_url, api_key="unused")
    reply = client.chat.completions.create(
        model="fake-model", messages=[{"role": "user", "content": "Hi"}], max_tokens=5
    )
    assert reply.object == "chat.completion" and reply.choices[0].finish_reason == "length"
    content, usage = reply.choices[0].message.content, reply.usage
    assert content is not None and usage is not None  # a whole reply carries its text and its usage
    assert tokenizer.count(content) == usage.completion_tokens == 5
    text = client.completions.create(model="fake-model", prompt="Once upon a time", max_tokens=4)
    assert text.object == "text_completion" and tokenizer.count(text.choices[0].text) == 4
    assert text.usage is not None
    assert text.usage.prompt_tokens == tokenizer.count("Once upon a time")
    streamed = list(client.completions.create(model="fake-model", prompt="Once", max_tokens=3, stream=True))
    assert [c.choices[0].finish_reason for c in streamed] == [None, None, "length"]


def test_same_prompt_gives_the_same_text(server: RunningServer) -> None:
    client = openai.OpenAI(base_url=server.openai_base_url, api_key="unused")

    def reply() -> str | None:
        asked = client.chat.completions.create(
            model="fake-model", messages=[{"role": "user", "content": "repeat"}], max_tokens=12
        )
        return asked.choices[0].message.content

    assert reply() == reply()


def test_continuous_usage_stats_put_usage_on_every_chunk(server: RunningServer) -> None:
    _, events = stream_chat(
        server.base_url, max_tokens=3, stream_options={"include_usage": True, "continuous_usage_stats": True}
    )
    chunks = json_events(events)
    assert all("usage" in c for c in chunks)
    assert [c["usage"]["completion_tokens"] for c in chunks[1:4]] == [1, 2, 3]


def test_reasoning_model_streams_reasoning_before_content(fake_server: FakeServer) -> None:
    server = fake_server(scenario="reasoning")
    client = openai.OpenAI(base_url=server.openai_base_url, api_key="unused")
    kinds = []
    usage: CompletionUsage | None = None
    for chunk in client.chat.completions.create(
        model="fake-model",
        messages=[{"role": "user", "content": "Why?"}],
        max_tokens=24,
        stream=True,
        stream_options={"include_usage": True},
    ):
        if chunk.usage:
            usage = chunk.usage
        if chunk.choices:
            delta = chunk.choices[0].delta.model_dump()
            kinds.append("reasoning" if delta.get("reasoning") else "content" if delta.get("content") else "other")
    assert kinds[1:17] == ["reasoning"] * 16 and kinds[17:] == ["content"] * 8
    assert usage is not None and usage.completion_tokens_details is not None  # the usage chunk came, with details
    assert usage.completion_tokens == 24 and usage.completion_tokens_details.reasoning_tokens == 16


def test_reasoning_that_uses_all_max_tokens_leaves_content_empty(fake_server: FakeServer) -> None:
    server = fake_server(scenario="reasoning-empty")
    _, events = stream_chat(server.base_url, max_tokens=20, stream_options={"include_usage": True})
    chunks = json_events(events)
    deltas = [c["choices"][0]["delta"] for c in chunks if c["choices"]]
    assert not any(d.get("content") for d in deltas)
    assert sum(1 for d in deltas if d.get("reasoning")) == 20
    assert chunks[-2]["choices"][0]["finish_reason"] == "length"
    assert chunks[-1]["usage"]["completion_tokens_details"]["reasoning_tokens"] == 20
    whole = httpx.post(server.base_url + "/v1/chat/completions", json=chat_body(max_tokens=20, stream=False)).json()
    assert whole["choices"][0]["message"]["content"] is None
    assert tokenizer.count(whole["choices"][0]["message"]["reasoning"]) == 20


def test_legacy_profile_uses_reasoning_content_and_older_context_message(fake_server: FakeServer) -> None:
    server = fake_server(scenario="reasoning-legacy", max_model_len=64)
    _, events = stream_chat(server.base_url, max_tokens=4)
    deltas = [c["choices"][0]["delta"] for c in json_events(events)]
    assert "reasoning_content" in deltas[1] and "reasoning" not in deltas[1]
    r = httpx.post(server.base_url + "/v1/chat/completions", json=chat_body(max_tokens=60, stream=False))
    assert r.status_code == 400
    assert r.json()["error"]["message"] == (
        "This model's maximum context length is 64 tokens. However, you requested 68 tokens "
        "(8 in the messages, 60 in the completion). Please reduce the length of the messages or completion."
    )


def test_multi_token_chunks_carry_several_tokens(fake_server: FakeServer) -> None:
    server = fake_server(scenario="multi-token-chunks")
    _, events = stream_chat(server.base_url, max_tokens=12, stream_options={"include_usage": True})
    chunks = json_events(events)
    content = [c["choices"][0]["delta"]["content"] for c in chunks[1:-1]]
    # the first token comes from prefill alone; then 4 per decode step: 1 + 4 + 4 + 3
    assert [tokenizer.count(c) for c in content] == [1, 4, 4, 3]
    assert chunks[-1]["usage"]["completion_tokens"] == 12


def test_models_tokenize_health_version(server: RunningServer) -> None:
    models = httpx.get(server.base_url + "/v1/models").json()
    assert models["data"][0]["id"] == "fake-model" and models["data"][0]["max_model_len"] == 8192
    messages = [{"role": "user", "content": "Hello there, general!"}]
    tok = httpx.post(server.base_url + "/tokenize", json={"model": "fake-model", "messages": messages}).json()
    usage = httpx.post(
        server.base_url + "/v1/chat/completions", json={"model": "fake-model", "messages": messages, "max_tokens": 1}
    ).json()["usage"]
    assert tok["count"] == len(tok["tokens"]) == usage["prompt_tokens"]
    assert tok["max_model_len"] == 8192
    assert httpx.get(server.base_url + "/health").status_code == 200
    assert "version" in httpx.get(server.base_url + "/version").json()


def test_errors_have_vllm_shapes_and_openai_exception_types(fake_server: FakeServer) -> None:
    server = fake_server(max_model_len=32)
    client = openai.OpenAI(base_url=server.openai_base_url, api_key="unused", max_retries=0)
    with pytest.raises(openai.NotFoundError) as nf:
        client.chat.completions.create(model="nope", messages=[{"role": "user", "content": "x"}])
    assert nf.value.body == {
        "message": "The model `nope` does not exist.",
        "type": "NotFoundError",
        "param": "model",
        "code": 404,
    }
    with pytest.raises(openai.BadRequestError) as bad:
        client.chat.completions.create(model="fake-model", messages=[{"role": "user", "content": "x"}], max_tokens=30)
    prompt = tokenizer.count(tokenizer.render_chat([{"role": "user", "content": "x"}]))
    assert isinstance(bad.value.body, dict)  # the error's JSON object
    assert bad.value.body["message"] == (
        f"This model's maximum context length is 32 tokens. However, you requested 30 output tokens and your "
        f"prompt contains at least {prompt} input tokens, for a total of at least {prompt + 30} tokens. Please "
        f"reduce the length of the input prompt or the number of requested output tokens."
    )
    r = httpx.post(
        server.base_url + "/v1/chat/completions", json=chat_body(stream=False, stream_options={"include_usage": True})
    )
    assert (
        r.status_code == 400
        and r.json()["error"]["message"] == "Stream options can only be defined when `stream=True`."
    )


@pytest.mark.parametrize(
    ("status", "exc"),
    [
        (400, openai.BadRequestError),
        (404, openai.NotFoundError),
        (429, openai.RateLimitError),
        (500, openai.InternalServerError),
    ],
)
def test_injected_http_errors_raise_the_matching_openai_exception(
    fake_server: FakeServer, status: int, exc: type[openai.APIStatusError]
) -> None:
    server = fake_server(faults=[{"kind": "http_error", "status": status}])
    client = openai.OpenAI(base_url=server.openai_base_url, api_key="unused", max_retries=0)
    with pytest.raises(exc) as info:
        client.chat.completions.create(model="fake-model", messages=[{"role": "user", "content": "x"}], stream=True)
    assert info.value.status_code == status
    if status == 429:
        assert info.value.response.headers["retry-after"] == "1"
    assert json.loads(info.value.response.text)["error"]["code"] == status
