"""A fleet of fake servers from one file: separate ledgers, clean shutdown."""

from __future__ import annotations

import subprocess
import sys
import threading
import time
from pathlib import Path

import httpx
import pytest
from kit_paths import ROOT

from fake_server import RunningServer, SettingsError, serve_fleet

FLEET = ROOT / "starter" / "fleet.yaml"


def _ask(server: RunningServer, model: str, key: str = "k") -> httpx.Response:
    return httpx.post(
        server.openai_base_url + "/chat/completions",
        headers={"Authorization": f"Bearer {key}"},
        json={"model": model, "messages": [{"role": "user", "content": "hi"}], "max_tokens": 2},
        timeout=10,
    )


def test_two_local_replicas_and_an_api_from_the_starter_file() -> None:
    before = {t.name for t in threading.enumerate()}
    with serve_fleet(FLEET, any_port=True) as fleet:
        assert set(fleet) == {"local-a", "local-b", "api"}
        ports = [s.port for s in fleet.values()]
        assert len(set(ports)) == 3
        for _ in range(2):
            assert _ask(fleet["local-a"], "qwen3-8b").status_code == 200
        assert _ask(fleet["local-b"], "qwen3-8b").status_code == 200
        assert _ask(fleet["api"], "opus-5.5", key="sk-fleet-demo").status_code == 200
        assert _ask(fleet["api"], "opus-5.5", key="wrong").status_code == 401
        assert [len(s.ledger()) for s in fleet.values()] == [2, 1, 2]
        assert fleet["api"].ledger()[0]["cost_usd"] > 0 and fleet["local-a"].ledger()[0]["cost_usd"] is None
    time.sleep(0.1)
    assert {t.name for t in threading.enumerate()} == before
    for port in ports:
        with pytest.raises(httpx.ConnectError):
            httpx.get(f"http://127.0.0.1:{port}/health", timeout=2)


def test_fleet_errors_name_the_server(tmp_path: Path) -> None:
    bad = tmp_path / "fleet.yaml"
    bad.write_text("servers:\n  one: {max_num_seqs: 0}\n")
    with pytest.raises(SettingsError, match=r"servers\.one: .*max_num_seqs"), serve_fleet(bad):
        pass
    clash = tmp_path / "clash.yaml"
    clash.write_text("servers:\n  a: {port: 18001}\n  b: {port: 18001}\n")
    with pytest.raises(SettingsError, match="port 18001 is already used by `a`"), serve_fleet(clash):
        pass


def test_fleet_command_prints_urls_and_stops_on_interrupt(tmp_path: Path) -> None:
    fleet = tmp_path / "fleet.yaml"
    fleet.write_text("servers:\n  local: {port: 0}\n  api: {port: 0, persona: api}\n")
    proc = subprocess.Popen(
        [sys.executable, "-m", "fake_server", "fleet", str(fleet)], stdout=subprocess.PIPE, text=True
    )
    try:
        assert proc.stdout is not None  # stdout=PIPE
        lines = [proc.stdout.readline(), proc.stdout.readline()]
        assert lines[0].split()[:2] == ["local", "local"] and lines[1].split()[:2] == ["api", "api"]
        url = lines[1].split()[-1]
        assert httpx.get(url + "/models").json()["data"][0]["id"] == "opus-5.5"
        proc.send_signal(2)
        assert proc.wait(10) == 0
    finally:
        if proc.poll() is None:  # a failed test leaves no server behind
            proc.kill()
            proc.wait()
