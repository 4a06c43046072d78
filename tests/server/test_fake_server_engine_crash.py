"""A step that raises: every request of that engine ends with an error, /health says 503, the
traceback is logged once, and a reset brings the engine back. The crash is injected with the
`engine_crash` fault, which raises inside a real engine step."""

from __future__ import annotations

import json
import logging
import threading
import time
from collections.abc import Callable
from typing import Any

import httpx
import pytest
from conftest import chat_body, metric_values, sse_events

from fake_server import serve, serve_subprocess

CRASH = {"kind": "engine_crash", "requests": [3], "after_tokens": 5}


def _stream_into(base_url: str, out: dict[str, Any], first_chunk: threading.Event) -> None:
    with httpx.stream(
        "POST", base_url + "/v1/chat/completions", timeout=30, json=chat_body(max_tokens=500, ignore_eos=True)
    ) as r:
        out["status"] = r.status_code
        raw = b""
        for part in r.iter_bytes():
            raw += part
            first_chunk.set()
        out["events"] = sse_events(raw)


def _whole_into(base_url: str, out: dict[str, Any]) -> None:
    r = httpx.post(
        base_url + "/v1/chat/completions", timeout=30, json=chat_body(stream=False, max_tokens=500, ignore_eos=True)
    )
    out["status"], out["body"] = r.status_code, r.json()


def _running(base_url: str) -> float:
    return metric_values(httpx.get(base_url + "/metrics").text)["vllm:num_requests_running{model_name=fake-model}"]


def _wait(predicate: Callable[[], bool], what: str, timeout: float = 10) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.01)


def _assert_error_stream(result: dict[str, Any]) -> None:
    assert result["status"] == 200
    events = result["events"]
    assert events[-1] == "[DONE]"
    error = json.loads(events[-2])["error"]
    assert error["code"] == 500 and "injected engine crash" in error["message"]


def test_a_crashed_step_ends_every_request_with_an_error_and_health_fails(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.ERROR, logger="fake_server")
    with serve(token_rate=100, faults=[CRASH]) as server:
        base = server.base_url
        stream1: dict[str, Any] = {}
        whole2: dict[str, Any] = {}
        stream3: dict[str, Any] = {}
        first = threading.Event()
        threads = [threading.Thread(target=_stream_into, args=(base, stream1, first))]
        threads[0].start()
        assert first.wait(10)
        threads.append(threading.Thread(target=_whole_into, args=(base, whole2)))
        threads[1].start()
        _wait(lambda: _running(base) == 2, "request 2 to run")
        assert httpx.get(base + "/health").status_code == 200
        threads.append(threading.Thread(target=_stream_into, args=(base, stream3, threading.Event())))
        threads[2].start()
        for t in threads:
            t.join(30)
            assert not t.is_alive()

        _assert_error_stream(stream1)
        _assert_error_stream(stream3)
        assert whole2["status"] == 500 and set(whole2["body"]["error"]) == {"message", "type", "param", "code"}
        assert "injected engine crash" in whole2["body"]["error"]["message"]
        assert httpx.get(base + "/health").status_code == 503
        records = server.ledger()
        assert sorted(r["number"] for r in records) == [1, 2, 3]
        assert all(r["finish_reason"] == "error" for r in records)
        by_number = {r["number"]: r for r in records}
        assert by_number[3]["completion_tokens"] == 5 and by_number[3]["fault"]["applied"]

        # a request after the crash is refused at once, with a body that says why
        late = httpx.post(base + "/v1/chat/completions", json=chat_body(stream=False, max_tokens=2), timeout=10)
        assert late.status_code == 500 and "has failed" in late.json()["error"]["message"]

        crash_logs = [r for r in caplog.records if r.name == "fake_server" and r.exc_info]
        assert len(crash_logs) == 1 and crash_logs[0].exc_info  # the records kept had a traceback
        assert "injected engine crash" in str(crash_logs[0].exc_info[1])

        server.set_faults([])
        server.reset()
        assert httpx.get(base + "/health").status_code == 200
        again = httpx.post(base + "/v1/chat/completions", json=chat_body(stream=False, max_tokens=3), timeout=10)
        assert again.status_code == 200 and again.json()["usage"]["completion_tokens"] == 3


def test_the_cli_logs_the_traceback_once() -> None:
    with serve_subprocess("--token-rate", "200") as server:
        server.set_faults([{"kind": "engine_crash", "requests": [1], "after_tokens": 2}])
        r = httpx.post(
            server.openai_base_url + "/chat/completions", json=chat_body(stream=False, max_tokens=10), timeout=10
        )
        status, body = r.status_code, r.json()
        assert status == 500 and "injected engine crash" in body["error"]["message"]
        assert httpx.get(server.base_url + "/health").status_code == 503
        _wait(lambda: "InjectedCrash" in server.log_text(), "the traceback in the log")
        log = server.log_text()
    assert log.count("Traceback (most recent call last)") == 1
