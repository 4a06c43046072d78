"""Reset while requests are in flight: a new ledger generation that older requests never mix into
or renumber, start-up settings applied at once, and a clear refusal where they cannot be."""

from __future__ import annotations

import threading
import time

import httpx
import pytest
from conftest import chat_body, metric_values

from fake_server import SettingsError, serve

OLD = 3
OLD_TOKENS = 200  # 4 s at 50 tok/s: still streaming after the new generation's requests, even on a loaded machine


def _running(base_url: str) -> float:
    return metric_values(httpx.get(base_url + "/metrics").text)["vllm:num_requests_running{model_name=fake-model}"]


def _start_streams(base_url: str, n: int, tokens: int) -> list[threading.Thread]:
    def one() -> None:
        with httpx.stream(
            "POST", base_url + "/v1/chat/completions", timeout=60, json=chat_body(max_tokens=tokens, ignore_eos=True)
        ) as r:
            r.read()

    threads = [threading.Thread(target=one) for _ in range(n)]
    for t in threads:
        t.start()
    deadline = time.monotonic() + 10
    while _running(base_url) < n:
        assert time.monotonic() < deadline, "streams never started"
        time.sleep(0.01)
    return threads


@pytest.mark.slow
def test_records_of_requests_in_flight_at_a_reset_stay_in_their_generation() -> None:
    with serve(token_rate=50, admin=True, faults=[{"kind": "http_error", "status": 503, "requests": [5]}]) as server:
        base = server.base_url
        threads = _start_streams(base, OLD, tokens=OLD_TOKENS)  # numbers 1..3 of generation 0
        server.set_faults([])
        server.configure(token_rate=500)
        server.reset()
        # the new generation numbers from 1, and its start-up fault (request 5 -> 503) is back
        codes = [
            httpx.post(
                base + "/v1/chat/completions", json=chat_body(stream=False, max_tokens=2), timeout=10
            ).status_code
            for _ in range(5)
        ]
        assert codes == [200, 200, 200, 200, 503]
        new = server.ledger()  # waits for the new generation only
        assert [(r["number"], r["generation"]) for r in new] == [(n, 1) for n in range(1, 6)]
        assert _running(base) == OLD  # the old streams are still going
        for t in threads:
            t.join(30)
        time.sleep(0.05)
        assert [r["number"] for r in server.ledger()] == [1, 2, 3, 4, 5]  # old records never arrive here
        old = server.ledger(generation=0)
        assert sorted(r["number"] for r in old) == [1, 2, 3] and all(r["generation"] == 0 for r in old)
        assert all(r["completion_tokens"] == OLD_TOKENS and r["finish_reason"] == "length" for r in old)
        assert len({r["id"] for r in old + new}) == OLD + 5
        since = httpx.get(base + "/admin/ledger?since=3").json()
        assert [r["number"] for r in since["records"]] == [4, 5] and since["generation"] == 1
        assert len(httpx.get(base + "/admin/ledger?generation=0").json()["records"]) == OLD
        # start-up settings came back at once although the model was busy
        assert httpx.get(base + "/admin/config").json()["models"]["fake-model"]["token_rate"] == 50


@pytest.mark.slow
def test_a_reset_that_cannot_restore_the_kv_cache_under_load_is_refused_and_changes_nothing() -> None:
    with serve(token_rate=50, admin=True) as server:
        base = server.base_url
        server.configure(kv_cache_tokens=100_000)
        threads = _start_streams(base, 2, tokens=25)
        server.configure(token_rate=10)  # slower: the streams stay in flight (~2.5 s) through both refusals
        server.set_faults([{"kind": "http_error", "status": 500, "requests": [9]}])
        with pytest.raises(
            SettingsError,
            match=r"reset refused, nothing was changed: cannot resize the KV cache of `fake-model` while 2 requests",
        ):
            server.reset()
        refused = httpx.post(base + "/admin/reset")
        assert refused.status_code == 400 and "reset refused" in refused.json()["error"]["message"]
        config = httpx.get(base + "/admin/config").json()
        assert config["models"]["fake-model"]["token_rate"] == 10 and config["faults"][0]["requests"] == [9]
        for t in threads:
            t.join(30)
        assert len(server.ledger()) == 2  # still generation 0
        server.reset()
        config = httpx.get(base + "/admin/config").json()
        assert config["models"]["fake-model"]["kv_cache_tokens"] != 100_000 and config["faults"] == []
        assert server.ledger() == []
