"""FAKE_SERVER_DRAW: servers whose slots and token rate are drawn from a seed, told by `settings()` and
`/admin/config`, and really run by the engine (read from the ledger's queue waits and decode times)."""

from __future__ import annotations

import os
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor

import httpx
import pytest
from conftest import chat_body

from fake_server import SettingsError, serve, serve_subprocess
from fake_server.server_draw import DRAW_ENV, SLOT_FACTORS, TOKEN_RATE_FACTOR, ServerDraw

ASKED_SLOTS, ASKED_RATE, TOKENS = 2, 50.0, 40


def test_a_seed_draws_the_same_factors_every_time_and_seeds_spread_over_the_published_ranges() -> None:
    draws = [ServerDraw.from_seed(str(seed)) for seed in range(1, 201)]
    assert [ServerDraw.from_seed(str(seed)) for seed in range(1, 201)] == draws
    assert {d.slots for d in draws} == set(SLOT_FACTORS)
    rates = [d.token_rate for d in draws]
    low, high = TOKEN_RATE_FACTOR
    assert all(low <= r <= high for r in rates) and max(rates) - min(rates) > 0.8 * (high - low)


def test_without_the_variable_or_with_0_a_server_runs_what_it_was_asked(monkeypatch: pytest.MonkeyPatch) -> None:
    for value in (None, "0"):
        if value is None:
            monkeypatch.delenv(DRAW_ENV, raising=False)
        else:
            monkeypatch.setenv(DRAW_ENV, value)
        with serve(max_num_seqs=ASKED_SLOTS, token_rate=ASKED_RATE) as server:
            got = server.settings()
            assert (got["max_num_seqs"], got["token_rate"]) == (ASKED_SLOTS, ASKED_RATE)


def _burst(base_url: str, requests: int) -> None:
    def one(_: int) -> int:
        body = chat_body(stream=True, max_tokens=TOKENS, ignore_eos=True)
        return httpx.post(base_url + "/v1/chat/completions", timeout=30, json=body).status_code

    with ThreadPoolExecutor(requests) as pool:
        assert list(pool.map(one, range(requests))) == [200] * requests


def test_a_drawn_server_reports_and_runs_the_drawn_slots_and_rate(
    monkeypatch: pytest.MonkeyPatch, capfd: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv(DRAW_ENV, "7")
    draw = ServerDraw.from_seed("7")
    with serve(max_num_seqs=ASKED_SLOTS, token_rate=ASKED_RATE) as server:
        got = server.settings()
        slots, rate = got["max_num_seqs"], got["token_rate"]
        assert (slots, rate) == (ASKED_SLOTS * draw.slots, pytest.approx(ASKED_RATE * draw.token_rate))
        _burst(server.base_url, requests=slots + ASKED_SLOTS)
        records = server.ledger()
    one_answer = TOKENS / rate
    waits = sorted(r["queue_wait"] for r in records)
    # the drawn slots start at once (more than were asked); the requests beyond them wait for an answer
    assert max(waits[:slots]) < 0.5 * one_answer
    assert min(waits[slots:]) > 0.5 * one_answer  # (less than a whole one: the burst arrives over some ms)
    # the drawn rate decodes: an answer takes TOKENS / rate, well under the asked rate's TOKENS / 50
    decode = sorted(r["finished"] - r["first_content"] for r in records)
    assert decode[len(decode) // 2] < 0.8 * (TOKENS - 1) / ASKED_RATE
    err = capfd.readouterr().err
    assert err.count(DRAW_ENV) == 1 and f"max_num_seqs {slots}" in err


def test_settings_changed_at_run_time_are_drawn_and_a_reset_keeps_the_drawn_start(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv(DRAW_ENV, "11")
    draw = ServerDraw.from_seed("11")
    with serve(max_num_seqs=ASKED_SLOTS, token_rate=ASKED_RATE) as server:
        server.configure(max_num_seqs=5)
        assert server.settings()["max_num_seqs"] == 5 * draw.slots
        assert server.settings()["token_rate"] == pytest.approx(ASKED_RATE * draw.token_rate)  # not drawn twice
        server.configure(prefill_overhead=0.01)
        assert server.settings()["max_num_seqs"] == 5 * draw.slots  # a change of something else leaves them be
        server.reset()
        assert server.settings()["max_num_seqs"] == ASKED_SLOTS * draw.slots


def test_a_cli_server_under_the_draw_says_so_and_its_admin_config_tells_a_test_what_it_got(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv(DRAW_ENV, "3")
    draw = ServerDraw.from_seed("3")
    args = ("--max-num-seqs", str(ASKED_SLOTS), "--token-rate", str(ASKED_RATE))
    with serve_subprocess(*args, env={DRAW_ENV: "3"}) as server:
        config = httpx.get(server.base_url + "/admin/config", timeout=10).json()
        (model,) = config["models"].values()
        assert model["max_num_seqs"] == ASKED_SLOTS * draw.slots
        assert server.settings()["max_num_seqs"] == ASKED_SLOTS * draw.slots
        assert DRAW_ENV in server.log_text()


def test_a_seed_that_is_not_one_is_refused_naming_the_variable(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(DRAW_ENV, "x" * 300)
    with pytest.raises(SettingsError, match=DRAW_ENV), serve(max_num_seqs=ASKED_SLOTS):
        pass
    done = subprocess.run(
        [sys.executable, "-m", "fake_server", "serve", "--port", "0"],
        check=False,
        capture_output=True,
        text=True,
        timeout=30,
        env={**os.environ, DRAW_ENV: "x" * 300},
    )
    assert done.returncode != 0 and DRAW_ENV in done.stderr and "Traceback" not in done.stderr


def test_settings_started_twice_are_drawn_once_each_not_compounded(monkeypatch: pytest.MonkeyPatch) -> None:
    from fake_server import build_settings

    monkeypatch.setenv(DRAW_ENV, "5")
    draw = ServerDraw.from_seed("5")
    settings = build_settings(max_num_seqs=ASKED_SLOTS, token_rate=ASKED_RATE)
    for _ in range(2):
        with serve(settings=settings) as server:
            assert server.settings()["max_num_seqs"] == ASKED_SLOTS * draw.slots
    assert settings.model.max_num_seqs == ASKED_SLOTS  # the caller's settings are left as they were
