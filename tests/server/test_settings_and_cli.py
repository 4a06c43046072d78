"""Settings from flags, scenario files and /admin, and the ways they can be wrong."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

import httpx
import openai
import pytest
from click.testing import CliRunner
from conftest import FakeServer, chat_body

from fake_server import RunningServer, SettingsError, build_settings, list_scenarios, serve_subprocess
from fake_server.cli import main


def test_every_builtin_scenario_loads_and_validates() -> None:
    names = [name for name, _ in list_scenarios()]
    for needed in (
        "baseline",
        "role-chunk-early",
        "reasoning-empty",
        "cut-mid-stream",
        "missing-done",
        "stream-error",
        "multi-token-chunks",
        "slot-saturation",
        "not-found",
        "server-error",
        "unhealthy",
    ):
        assert needed in names
    for name in names:
        build_settings(name)


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--max-num-seqs", "0"], "`--max-num-seqs` must be between 1 and 65536 (got 0)"),
        (["--token-rate", "-3"], "`--token-rate` must be between"),
        (["--jitter", "2"], "`--jitter` must be between 0 and 0.9"),
        (["--kv-cache-tokens", "100", "--max-model-len", "4096"], "`--kv-cache-tokens` (100) must hold one sequence"),
        (
            ["--output-len-min", "50", "--output-len-max", "10"],
            "`--output-len-min` (50) is above `--output-len-max` (10)",
        ),
        (["--scenario", "no-such-scenario"], "scenario `no-such-scenario` is neither a built-in"),
    ],
)
def test_invalid_settings_fail_at_start_naming_the_setting(args: list[str], message: str) -> None:
    result = CliRunner().invoke(main, ["serve", *args, "--port", "0"])
    assert result.exit_code == 2
    assert message in result.output
    assert "Traceback" not in result.output


def test_scenario_file_errors_name_file_line_and_key(tmp_path: Path) -> None:
    broken = tmp_path / "broken.yaml"
    broken.write_text("max_num_seqs: 2\ntoken_rate: [unclosed\n")
    with pytest.raises(SettingsError, match=r"broken.yaml: line \d+ is not valid YAML"):
        build_settings(str(broken))
    typo = tmp_path / "typo.yaml"
    typo.write_text("max_num_seq: 2\n")
    with pytest.raises(SettingsError, match="unknown setting `max_num_seq`"):
        build_settings(str(typo))
    bad_fault = tmp_path / "fault.yaml"
    bad_fault.write_text("faults:\n  - kind: explode\n")
    with pytest.raises(SettingsError, match=r"faults\[0\]\.kind: must be one of"):
        build_settings(str(bad_fault))


def test_precedence_defaults_then_file_then_overrides(tmp_path: Path) -> None:
    scenario = tmp_path / "s.yaml"
    scenario.write_text("max_num_seqs: 3\ntoken_rate: 10\nmodels:\n  other-model:\n    max_model_len: 1024\n")
    settings = build_settings(str(scenario), token_rate=99)
    assert settings.model.max_num_seqs == 3 and settings.model.token_rate == 99
    assert settings.models()["other-model"].max_model_len == 1024
    assert settings.model.max_model_len == 8192


def test_subprocess_server_with_vllm_style_flags_and_admin_token() -> None:
    with serve_subprocess(
        "Qwen/Qwen3-8B", "--max-model-len", "2048", "--max-num-seqs", "4", "--token-rate", "500", admin_token="s3cret"
    ) as server:
        models = httpx.get(server.base_url + "/v1/models").json()["data"]
        assert [(m["id"], m["max_model_len"]) for m in models] == [("Qwen/Qwen3-8B", 2048)]
        assert httpx.get(server.base_url + "/admin/config").status_code == 401
        server.configure(max_num_seqs=1)
        headers = {"Authorization": "Bearer s3cret"}
        config = httpx.get(server.base_url + "/admin/config", headers=headers).json()
        assert config["models"]["Qwen/Qwen3-8B"]["max_num_seqs"] == 1
        bad = httpx.patch(server.base_url + "/admin/config", json={"max_num_seqs": -1}, headers=headers)
        assert bad.status_code == 400 and "max_num_seqs" in bad.json()["error"]["message"]
        client = openai.OpenAI(base_url=server.openai_base_url, api_key="x")
        client.chat.completions.create(
            model="Qwen/Qwen3-8B", messages=[{"role": "user", "content": "hi"}], max_tokens=2
        )
        assert [r["completion_tokens"] for r in server.ledger()] == [2]
        server.reset()
        assert server.ledger() == []


def test_run_time_faults_and_config_through_the_python_api(fake_server: FakeServer) -> None:
    server = fake_server(token_rate=500)
    server.set_faults([{"kind": "http_error", "status": 502}])
    assert httpx.post(server.base_url + "/v1/chat/completions", json=chat_body(stream=False)).status_code == 502
    server.set_faults([])
    server.configure(max_model_len=20)
    r = httpx.post(server.base_url + "/v1/chat/completions", json=chat_body(stream=False, max_tokens=15))
    assert r.status_code == 400 and "maximum context length is 20" in r.json()["error"]["message"]
    with pytest.raises(SettingsError, match="max_num_seqs"):
        server.configure(max_num_seqs=0)


def test_ledger_file_is_written_as_jsonl(tmp_path: Path, fake_server: FakeServer) -> None:
    path = tmp_path / "ledger.jsonl"
    server = fake_server(ledger=str(path), token_rate=500)
    for _ in range(3):
        httpx.post(server.base_url + "/v1/chat/completions", json=chat_body(stream=False, max_tokens=2))
    from fake_server.hosting.launch import ledger_lines

    lines = ledger_lines(path)
    assert [r["number"] for r in lines] == [1, 2, 3]
    assert all(r["completion_tokens"] == 2 and r["prefill_end"] >= r["prefill_start"] for r in lines)


def test_module_entry_point_lists_scenarios() -> None:
    out = subprocess.run([sys.executable, "-m", "fake_server", "scenarios"], capture_output=True, text=True, check=True)
    assert "slot-saturation" in out.stdout


def test_ledger_waits_for_requests_in_flight(fake_server: FakeServer) -> None:
    import threading

    server = fake_server(token_rate=5)  # 2 s of answer: room to see it in flight on a busy machine
    thread = threading.Thread(
        target=httpx.post,
        args=(server.base_url + "/v1/chat/completions",),
        kwargs={"json": chat_body(stream=False, max_tokens=10), "timeout": 10},
    )
    thread.start()
    # once the server holds the request (its metrics say one is running), not after a guessed sleep: on a busy
    # machine the client's thread may take longer than any fixed pause to send it
    deadline = time.monotonic() + 10
    while "vllm:num_requests_running" not in _running(server) and time.monotonic() < deadline:
        time.sleep(0.01)
    assert server.ledger(settle=0) == []
    assert [r["completion_tokens"] for r in server.ledger()] == [10]
    thread.join()


def _running(server: RunningServer) -> str:
    """The metrics line of a model with a request running, or ''."""
    return next(
        (
            line
            for line in server.metrics().splitlines()
            if line.startswith("vllm:num_requests_running{") and not line.endswith(" 0.0")
        ),
        "",
    )


def test_memory_keeps_the_newest_records_and_the_file_keeps_all(tmp_path: Path, fake_server: FakeServer) -> None:
    path = tmp_path / "ledger.jsonl"
    server = fake_server(ledger=str(path), ledger_keep=2, token_rate=1000)
    for _ in range(5):
        httpx.post(server.base_url + "/v1/chat/completions", json=chat_body(stream=False, max_tokens=1))
    from fake_server.hosting.launch import ledger_lines

    assert [r["number"] for r in server.ledger()] == [4, 5]
    assert [r["number"] for r in ledger_lines(path)] == [1, 2, 3, 4, 5]
