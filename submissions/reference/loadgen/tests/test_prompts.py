"""Prompts are about --prompt-tokens long, differ between requests and repeat between runs."""

from __future__ import annotations

from fake_server import tokenizer

from loadgen import LoadConfig
from loadgen.prompts import make_prompt
from loadgen.runner import request_body


def test_prompt_has_the_asked_number_of_tokens():
    for tokens in (1, 16, 64, 500):
        assert tokenizer.count(make_prompt(0, tokens)) == tokens


def test_prompts_differ_between_requests_so_the_prefix_cache_cannot_flatter_ttft():
    first_words = {make_prompt(i, 64).split()[:4].__repr__() for i in range(50)}
    assert len(first_words) == 50


def test_same_seed_same_prompts():
    assert make_prompt(3, 32, seed=1) == make_prompt(3, 32, seed=1) != make_prompt(3, 32, seed=2)


def test_request_is_a_plain_streaming_openai_chat_completion():
    body = request_body(LoadConfig("http://x/v1", "m", 1, 1, 8, 16), 0)
    assert body["stream"] is True and body["stream_options"] == {"include_usage": True}
    assert body["max_tokens"] == 16 and body["model"] == "m"
    assert set(body) == {"model", "messages", "max_tokens", "stream", "stream_options"}  # no ignore_eos
