"""RunningServer's controls give the same answers in-process (the server's loop) and over /admin/*.

Every check runs against a thread-hosted server and against a subprocess (which is driven only
through the admin API), and observes the effect through the public OpenAI endpoints.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Iterator

import httpx
import pytest
from conftest import chat_body

from fake_server import RunningServer, SettingsError, serve, serve_subprocess


@pytest.fixture(params=["thread", "subprocess"])
def server(request: pytest.FixtureRequest) -> Iterator[RunningServer]:
    with contextlib.ExitStack() as stack:
        if request.param == "thread":
            yield stack.enter_context(serve(token_rate=500, max_model_len=4096))
        else:
            yield stack.enter_context(serve_subprocess("--token-rate", "500", "--max-model-len", "4096"))


def _ask(server: RunningServer, max_tokens: int = 3) -> httpx.Response:
    return httpx.post(
        server.openai_base_url + "/chat/completions",
        timeout=30,
        json=chat_body(stream=False, max_tokens=max_tokens),
        headers={"Authorization": "Bearer x"},
    )


def _max_model_len(server: RunningServer) -> int:
    (model,) = httpx.get(server.openai_base_url + "/models", timeout=10).json()["data"]
    return int(model["max_model_len"])


def test_configure_changes_what_the_server_reports_and_refuses_bad_values_whole(server: RunningServer) -> None:
    server.configure(max_model_len=2048)
    assert _max_model_len(server) == 2048
    with pytest.raises(SettingsError, match="max_num_seqs"):
        server.configure(max_num_seqs=0, max_model_len=1024)
    assert _max_model_len(server) == 2048  # nothing of the refused call applied
    with pytest.raises(SettingsError, match="no-such-model"):
        server.configure(model="no-such-model", max_model_len=1024)


def test_faults_health_and_reset(server: RunningServer) -> None:
    server.set_faults([{"kind": "http_error", "status": 503, "every": True}])
    assert _ask(server).status_code == 503
    with pytest.raises(SettingsError, match="kind"):
        server.set_faults([{"kind": "no-such-fault"}])
    server.set_faults([])
    assert _ask(server).status_code == 200

    server.set_healthy(False)
    assert httpx.get(server.base_url + "/health", timeout=10).status_code == 503
    server.set_healthy(True)
    assert httpx.get(server.base_url + "/health", timeout=10).status_code == 200

    first = server.ledger()
    assert [r["number"] for r in first] == [1, 2] and [r["status"] for r in first] == [503, 200]
    server.set_faults([{"kind": "http_error", "status": 500, "every": True}])
    server.configure(max_model_len=1024)
    server.reset()
    assert _max_model_len(server) == 4096  # the start-up settings again
    assert _ask(server, max_tokens=2).status_code == 200  # and no faults
    (record,) = server.ledger()
    assert (
        record["number"] == 1
        and record["completion_tokens"] == 2
        and record["generation"] == first[0]["generation"] + 1
    )
    assert [r["number"] for r in server.ledger(generation=first[0]["generation"])] == [1, 2]


def test_ledger_waits_for_requests_in_flight(server: RunningServer) -> None:
    server.configure(token_rate=40)
    with (
        httpx.Client(timeout=30) as client,
        client.stream(
            "POST", server.openai_base_url + "/chat/completions", json=chat_body(max_tokens=10, ignore_eos=True)
        ) as response,
    ):
        assert response.status_code == 200
        assert server.ledger(settle=0) == []  # still streaming: not recorded yet
        response.read()
    (record,) = server.ledger(settle=10)
    assert record["completion_tokens"] == 10


def test_health_checks_say_when_a_probe_asked_and_what_it_was_told(server: RunningServer) -> None:
    before = time.time()
    assert httpx.get(server.base_url + "/health", timeout=10).status_code == 200
    server.set_faults([{"kind": "unhealthy"}])
    middle = time.time()
    assert httpx.get(server.base_url + "/health", timeout=10).status_code == 503
    server.reset()  # a probe is not a request: the log outlives a reset
    assert httpx.get(server.base_url + "/health", timeout=10).status_code == 200
    checks = server.health_checks(since=before)
    assert [c["status"] for c in checks] == [200, 503, 200]
    assert before < checks[0]["at"] < middle < checks[1]["at"] <= checks[2]["at"] <= time.time()
    assert [c["status"] for c in server.health_checks(since=middle)] == [503, 200]
    assert server.health_checks(since=time.time() + 60) == []


def test_the_health_log_refuses_a_since_that_is_not_a_time() -> None:
    with serve_subprocess("--admin") as server:
        answer = httpx.get(server.base_url + "/admin/health-checks", params={"since": "yesterday"}, timeout=10)
        assert answer.status_code == 400 and "since" in answer.json()["error"]["message"]
