"""FAKE_SERVER_IGNORE_SLOT_LIMIT: the grader's switch that removes the slot limit, in-process and
in the CLI, read from the ledger's queue waits."""

from __future__ import annotations

import os
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import httpx
import pytest
from conftest import chat_body

from fake_server import serve, serve_subprocess

ENV = "FAKE_SERVER_IGNORE_SLOT_LIMIT"
SLOTS = 2
REQUESTS = 8
TOKENS = 100
RATE = 100.0  # one request lasts TOKENS / RATE = 1 s: long beside a loaded machine's scheduling delays


def _burst(base_url: str) -> None:
    def one(_: int) -> int:
        return httpx.post(
            base_url + "/v1/chat/completions",
            timeout=30,
            json=chat_body(stream=True, max_tokens=TOKENS, ignore_eos=True),
        ).status_code

    with ThreadPoolExecutor(REQUESTS) as pool:
        assert list(pool.map(one, range(REQUESTS))) == [200] * REQUESTS


def _queue_waits(records: list[dict[str, Any]]) -> list[float]:
    assert len(records) == REQUESTS and all(r["completion_tokens"] == TOKENS for r in records)
    return sorted(r["queue_wait"] for r in records)


@pytest.mark.slow
def test_with_the_switch_every_request_starts_at_once_without_it_they_queue(
    monkeypatch: pytest.MonkeyPatch, capfd: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.delenv(ENV, raising=False)
    with serve(max_num_seqs=SLOTS, token_rate=RATE) as server:
        _burst(server.base_url)
        limited = _queue_waits(server.ledger())
    # control: with two slots, six requests wait for at least one earlier request to finish
    assert sum(w >= 0.8 * TOKENS / RATE for w in limited) >= REQUESTS - SLOTS
    assert ENV not in capfd.readouterr().err

    monkeypatch.setenv(ENV, "1")
    with serve(max_num_seqs=SLOTS, token_rate=RATE, kv_cache_tokens=8192 + 16, max_model_len=8192) as server:
        _burst(server.base_url)
        unlimited = _queue_waits(server.ledger())
        assert server.state is not None and server.state.settings.model.max_num_seqs == SLOTS  # settings unchanged
    # none waits as long as a request lasts, most hardly at all (one may wait for a core on a loaded machine)
    assert max(unlimited) < 0.8 * TOKENS / RATE and sorted(unlimited)[REQUESTS // 2] < 0.25 * TOKENS / RATE
    err = capfd.readouterr().err
    assert err.count(ENV) == 1 and "without a slot limit" in err


def test_the_cli_honours_the_switch_and_logs_it_once(tmp_path: Path) -> None:
    with serve_subprocess("--max-num-seqs", str(SLOTS), "--token-rate", str(RATE), env={ENV: "1"}) as server:
        _burst(server.base_url)
        waits = _queue_waits(server.ledger())
        log = server.log_text()
    assert max(waits) < 0.25 * TOKENS / RATE
    assert log.count(ENV) == 1


def test_a_bad_value_is_a_one_line_usage_error() -> None:
    env = {**os.environ, ENV: "maybe"}
    proc = subprocess.run(
        [sys.executable, "-m", "fake_server", "serve", "--port", "0"],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert proc.returncode == 2
    assert f"{ENV} must be 1 or 0 (got 'maybe')" in proc.stderr and "Traceback" not in proc.stderr
