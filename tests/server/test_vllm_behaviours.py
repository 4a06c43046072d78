"""Behaviours that an independent review of the fake server found wrong, pinned so they stay right."""

from __future__ import annotations

import threading
import time
from typing import Any

import httpx
import pytest
from conftest import FakeServer, chat_body, json_events, metric_values, stream_chat

from fake_server import RunningServer, SettingsError, tokenizer


def _post(
    server: RunningServer,
    body: dict[str, Any],
    path: str = "/v1/chat/completions",
    timeout: float = 30.0,
    headers: dict[str, str] | None = None,
) -> httpx.Response:
    return httpx.post(server.base_url + path, json=body, timeout=timeout, headers=headers)


def test_completions_default_to_16_tokens_as_vllm(fake_server: FakeServer) -> None:
    server = fake_server(token_rate=1000)
    r = _post(server, {"model": "fake-model", "prompt": "hello", "ignore_eos": True}, "/v1/completions").json()
    assert r["usage"]["completion_tokens"] == 16


@pytest.mark.parametrize("stream", [False, True])
def test_stop_strings_cut_the_text_where_they_begin(fake_server: FakeServer, stream: bool) -> None:
    server = fake_server(token_rate=1000)
    plain = _post(server, chat_body("stop test", max_tokens=12, stream=False, ignore_eos=True)).json()
    text = plain["choices"][0]["message"]["content"]
    words = text.split(" ")[1:]
    for stop in (" " + words[3] + " " + words[4], words[2][1:3], words[5][-1]):
        expected = text[: text.find(stop)]
        if stream:
            _, events = stream_chat(server.base_url, content="stop test", max_tokens=12, stop=[stop], ignore_eos=True)
            chunks = json_events(events)
            got = "".join(c["choices"][0]["delta"].get("content") or "" for c in chunks)
            last = chunks[-1]["choices"][0]
        else:
            reply = _post(
                server, chat_body("stop test", max_tokens=12, stream=False, stop=[stop], ignore_eos=True)
            ).json()
            got, last = reply["choices"][0]["message"]["content"], reply["choices"][0]
        assert got == expected, stop
        assert last["finish_reason"] == "stop" and last["stop_reason"] == stop


def test_prompt_tokens_metric_counts_scheduled_prompts_only(fake_server: FakeServer) -> None:
    server = fake_server(max_num_seqs=1, token_rate=20, admin=True)
    blocker = threading.Thread(
        target=_post, args=(server, chat_body("first", max_tokens=20, stream=False, ignore_eos=True))
    )
    blocker.start()
    time.sleep(0.2)
    with pytest.raises(httpx.ReadTimeout):  # queued behind the blocker, then abandoned
        _post(server, chat_body("word " * 200, max_tokens=5, stream=False), timeout=0.2)
    blocker.join()
    first = tokenizer.count(tokenizer.render_chat([{"role": "user", "content": "first"}]))
    assert metric_values(server.metrics())["vllm:prompt_tokens_total{model_name=fake-model}"] == first


def test_the_answer_names_the_first_served_name_whatever_alias_was_asked(fake_server: FakeServer) -> None:
    server = fake_server(served_model_name=["org/Model-8B", "alias"], token_rate=1000)
    assert (
        _post(server, {"model": "alias", "messages": [{"role": "user", "content": "x"}], "max_tokens": 1}).json()[
            "model"
        ]
        == "org/Model-8B"
    )
    models = httpx.get(server.base_url + "/v1/models").json()["data"]
    assert abs(models[0]["created"] - time.time()) < 600 and models[0]["permission"][0]["object"] == "model_permission"


def test_multi_token_steps_do_not_reserve_past_max_tokens(fake_server: FakeServer) -> None:
    server = fake_server(max_model_len=64, kv_cache_tokens=80, tokens_per_chunk=48, token_rate=1000)
    r = _post(server, chat_body("x", max_tokens=56, stream=False, ignore_eos=True))
    assert r.json()["usage"]["completion_tokens"] == 56
    assert server.ledger()[0]["preemptions"] == 0


@pytest.mark.parametrize(
    "body",
    [
        b"[" * 100_000,
        b'{"messages": [{"role": "user", "content": "\\ud800"}]}',
        b'{"messages": [{"role": "user", "content": "x"}], "max_tokens": ' + b"9" * 5000 + b"}",
    ],
)
def test_pathological_bodies_get_400_and_close_their_ledger_record(fake_server: FakeServer, body: bytes) -> None:
    server = fake_server()
    for path in ("/v1/chat/completions", "/tokenize"):
        r = httpx.post(server.base_url + path, content=body, headers={"content-type": "application/json"})
        assert r.status_code == 400 and r.json()["error"]["code"] == 400
    assert server.state is not None  # the fixture's server runs in this process: its live state is here
    assert server.state.ledger.in_flight == 0


def test_admin_rejects_non_ascii_digits(fake_server: FakeServer) -> None:
    server = fake_server(admin=True)
    assert httpx.get(server.base_url + "/admin/ledger", params={"since": "²"}).status_code == 400


@pytest.mark.slow
def test_a_client_leaving_a_stalled_whole_response_frees_its_slot(fake_server: FakeServer) -> None:
    server = fake_server(token_rate=20, faults=[{"kind": "stall_after_headers", "seconds": 3}])
    with pytest.raises(httpx.ReadTimeout):
        _post(server, chat_body(max_tokens=60, stream=False, ignore_eos=True), timeout=0.5)
    time.sleep(0.3)
    assert metric_values(server.metrics())["vllm:num_requests_running{model_name=fake-model}"] == 0
    record = server.ledger()[0]
    assert record["finish_reason"] == "abort" and record["error"] == "client disconnected"


def test_reset_keeps_request_ids_unique(fake_server: FakeServer) -> None:
    server = fake_server(token_rate=1000)
    first = _post(server, chat_body(stream=False, max_tokens=1)).json()["id"]
    server.reset()
    assert _post(server, chat_body(stream=False, max_tokens=1)).json()["id"] != first


def test_two_servers_with_one_seed_give_ids_of_their_own_and_each_the_same_ids_again(fake_server: FakeServer) -> None:
    """A gateway's local route and hosted API, both seeded alike, never answer with the same id; the same server
    started again at the same seed gives the same ids (a grade is repeatable)."""
    local = fake_server(token_rate=1000, seed=5, served_model_name=["qwen-local"])
    api = fake_server(token_rate=1000, seed=5, persona="api", served_model_name=["opus-api"])
    again = fake_server(token_rate=1000, seed=5, served_model_name=["qwen-local"])

    def first_id(server: RunningServer, model: str) -> str:
        body = {**chat_body(stream=False, max_tokens=1), "model": model}
        reply_id: str = _post(server, body, headers={"Authorization": "Bearer k"}).json()["id"]
        return reply_id

    ids = [first_id(local, "qwen-local"), first_id(api, "opus-api"), first_id(again, "qwen-local")]
    assert ids[0] != ids[1] and ids[0] == ids[2], ids


def test_a_failed_configure_changes_no_model(fake_server: FakeServer) -> None:
    server = fake_server(token_rate=5, models={"other": {"max_num_seqs": 2}})
    busy = threading.Thread(
        target=_post,
        args=(
            server,
            {"model": "other", "messages": [{"role": "user", "content": "x"}], "max_tokens": 5, "ignore_eos": True},
        ),
    )
    busy.start()
    assert server.state is not None  # the fixture's server runs in this process: its live state is here
    other = server.state.engines["other"]
    deadline = time.monotonic() + 10  # the request is in flight once the engine counts it, however busy the host
    while other.num_running + other.num_waiting == 0 and time.monotonic() < deadline:
        time.sleep(0.01)
    with pytest.raises(SettingsError, match="in flight"):
        server.configure(kv_cache_tokens=100_000, max_num_seqs=7)
    busy.join()
    engines = server.state.engines
    assert (engines["fake-model"].settings.max_num_seqs, engines["other"].settings.max_num_seqs) == (256, 2)
    assert engines["fake-model"].settings.kv_cache_tokens != 100_000


def test_fault_selectors_that_select_nothing(fake_server: FakeServer) -> None:
    server = fake_server(token_rate=1000, faults=[{"kind": "http_error", "status": 503, "requests": []}])
    assert _post(server, chat_body(stream=False, max_tokens=1)).status_code == 200
    with pytest.raises(SettingsError, match="every: false selects nothing"):
        server.set_faults([{"kind": "http_error", "every": False}])
    with pytest.raises(SettingsError, match="4xx or 5xx"):
        server.set_faults([{"kind": "stream_error", "status": 42}])


def test_injected_engine_errors_count_as_error_not_abort(fake_server: FakeServer) -> None:
    server = fake_server(token_rate=1000, scenario="stream-error")
    stream_chat(server.base_url, max_tokens=10)
    values = metric_values(server.metrics())
    assert values["vllm:request_success_total{finished_reason=error,model_name=fake-model}"] == 1
    assert values["vllm:request_success_total{finished_reason=abort,model_name=fake-model}"] == 0


def test_prompt_token_details_follow_vllms_flag(fake_server: FakeServer) -> None:
    on, off = fake_server(token_rate=1000), fake_server(token_rate=1000, enable_prompt_tokens_details=False)
    assert _post(on, chat_body(stream=False, max_tokens=1)).json()["usage"]["prompt_tokens_details"] == {
        "cached_tokens": 0
    }
    assert "prompt_tokens_details" not in _post(off, chat_body(stream=False, max_tokens=1)).json()["usage"]
    _, events = stream_chat(off.base_url, max_tokens=2, stream_options={"include_usage": True})
    assert "prompt_tokens_details" not in json_events(events)[-1]["usage"]


def test_continuous_usage_counts_tokens_up_to_each_chunk_even_in_a_burst(fake_server: FakeServer) -> None:
    # a stall mid-stream makes the writer send several waiting tokens at once
    server = fake_server(token_rate=200, faults=[{"kind": "stall", "after_tokens": 2, "seconds": 0.2}])
    _, events = stream_chat(
        server.base_url,
        max_tokens=12,
        ignore_eos=True,
        stream_options={"include_usage": True, "continuous_usage_stats": True},
    )
    counts = [c["usage"]["completion_tokens"] for c in json_events(events)[1:-1]]
    assert counts == list(range(1, 13))
