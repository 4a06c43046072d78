"""Bad input always gets a 4xx with an OpenAI-style error body naming what was wrong."""

from __future__ import annotations

import itertools
import random
from collections.abc import Iterator

import httpx
import pytest

from fake_server import RunningServer

GOOD = {"model": "fake-model", "messages": [{"role": "user", "content": "hi"}], "max_tokens": 2}

CASES = [
    (b"{not json", "not valid JSON"),
    (b"", "empty"),
    (b"[1, 2, 3]", "JSON object"),
    (b'"just a string"', "JSON object"),
    (b'{"model": "fake-model"}', "`messages` is required"),
    (b'{"model": "fake-model", "messages": []}', "non-empty list"),
    (b'{"model": "fake-model", "messages": "hello"}', "non-empty list"),
    (b'{"model": "fake-model", "messages": [{"content": "x"}]}', "messages[0].role"),
    (b'{"model": "fake-model", "messages": [{"role": "user", "content": 5}]}', "messages[0].content"),
    (b'{"model": "fake-model", "messages": [{"role": "user", "content": [{"type": "image_url"}]}]}', "text part"),
    (b'{"model": 7, "messages": [{"role": "user", "content": "x"}]}', "`model` must be a string"),
    (b'{"messages": [{"role": "user", "content": "x"}], "max_tokens": -5}', "max_tokens must be at least 1, got -5."),
    (b'{"messages": [{"role": "user", "content": "x"}], "max_tokens": 0}', "max_tokens must be at least 1, got 0."),
    (b'{"messages": [{"role": "user", "content": "x"}], "max_tokens": "ten"}', "`max_tokens` must be an integer"),
    (b'{"messages": [{"role": "user", "content": "x"}], "max_tokens": 2.5}', "`max_tokens` must be an integer"),
    (b'{"messages": [{"role": "user", "content": "x"}], "stream": "yes"}', "`stream` must be true or false"),
    (b'{"messages": [{"role": "user", "content": "x"}], "temperature": 9}', "`temperature`"),
    (b'{"messages": [{"role": "user", "content": "x"}], "n": 3}', "n=3"),
    (b'{"messages": [{"role": "user", "content": "x"}], "stop": 5}', "`stop`"),
    (b'{"messages": [{"role": "user", "content": "x"}], "stream": true, "stream_options": []}', "`stream_options`"),
    (b'{"messages": [{"role": "user", "content": "x"}], "seed": "abc"}', "`seed`"),
    (b"\xff\xfe garbage bytes", "not valid JSON"),
]


@pytest.fixture(scope="module")
def server() -> Iterator[RunningServer]:
    from fake_server import serve

    with serve(port=0, token_rate=1000) as s:
        yield s


@pytest.mark.parametrize(("body", "message"), CASES)
def test_bad_chat_bodies_get_400_naming_the_problem(server: RunningServer, body: bytes, message: str) -> None:
    r = httpx.post(server.base_url + "/v1/chat/completions", content=body, headers={"content-type": "application/json"})
    assert r.status_code == 400, r.text
    error = r.json()["error"]
    assert set(error) == {"message", "type", "param", "code"} and error["code"] == 400
    assert message in error["message"]


def test_bad_completion_prompts(server: RunningServer) -> None:
    for prompt in (None, 5, [], [["a"], ["b"]], ["one", "two"], [1, -2]):
        r = httpx.post(server.base_url + "/v1/completions", json={"model": "fake-model", "prompt": prompt})
        assert r.status_code == 400 and "`prompt`" in r.json()["error"]["message"]


def test_huge_body_is_413_not_a_crash(server: RunningServer) -> None:
    r = httpx.post(
        server.base_url + "/v1/chat/completions",
        content=b"x" * (17 * 1024 * 1024),
        headers={"content-type": "application/json"},
        timeout=60,
    )
    assert r.status_code == 413 and "limit" in r.json()["error"]["message"]


def test_unknown_paths_and_methods_get_error_bodies(server: RunningServer) -> None:
    r = httpx.get(server.base_url + "/v1/nothing-here")
    assert r.status_code == 404 and r.json()["error"]["code"] == 404
    r = httpx.get(server.base_url + "/v1/chat/completions")
    assert r.status_code == 405 and r.json()["error"]["code"] == 405
    assert httpx.get(server.base_url + "/admin/ledger").status_code == 404  # admin is off by default


def test_mutated_valid_bodies_never_get_a_5xx(server: RunningServer) -> None:
    """Seeded mutations of every field of a valid body: wrong types, nulls, huge and nested values."""
    rng = random.Random(1234)
    weird: list[object] = [None, True, -1, 0, 10**30, 1e308, "", "x" * 10000, [], [None], {}, {"a": {"b": []}}, 3.5]
    keys = [
        "model",
        "messages",
        "max_tokens",
        "max_completion_tokens",
        "stream",
        "stream_options",
        "temperature",
        "top_p",
        "n",
        "stop",
        "seed",
        "ignore_eos",
        "min_tokens",
        "user",
        "logit_bias",
    ]
    statuses = set()
    with httpx.Client(base_url=server.base_url, timeout=30) as client:
        for key, value in itertools.islice(((k, v) for k in keys for v in weird), 400):
            body = dict(GOOD, **{key: value})
            if rng.random() < 0.5:
                body["stream"] = True
            r = client.post("/v1/chat/completions", json=body)
            statuses.add(r.status_code)
            assert r.status_code < 500, (key, value, r.text)
            if r.status_code >= 400:
                assert r.json()["error"]["code"] == r.status_code
    assert 400 in statuses and 200 in statuses
