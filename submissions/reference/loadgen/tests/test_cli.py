"""The command line as the grader runs it: flags in, results file and table out, clear errors."""

from __future__ import annotations

import json
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

from click.testing import CliRunner

import loadgen
from loadgen.cli import command

SUBMISSION = Path(loadgen.__file__).resolve().parent.parent  # the folder `python -m loadgen` runs from


@dataclass
class Finished:
    returncode: int
    stdout: str
    stderr: str


def cli(*args: str) -> Finished:
    """The command line run in this process, its exit code and output as `python -m loadgen` gives them: an
    interpreter per call would cost about a second each (test_the_module_runs_as_the_grader_runs_it starts
    one). An exception the command lets escape is raised here: it would be a traceback on the terminal."""
    result = CliRunner().invoke(command, list(args), prog_name="python -m loadgen")
    if result.exception is not None and not isinstance(result.exception, SystemExit):
        raise result.exception
    return Finished(result.exit_code, result.stdout, result.stderr)


def flags(base_url: str, output: Path, requests: int = 8) -> list[str]:
    return ["--base-url", base_url, "--model", "fake-model", "--requests", str(requests), "--concurrency", "4",
            "--prompt-tokens", "16", "--max-tokens", "16", "--output", str(output)]


def test_run_writes_the_results_file_and_an_honest_table(fake_server, tmp_path):
    server = fake_server(scenario="baseline")
    out = tmp_path / "results.json"
    done = cli(*flags(server.openai_base_url, out))
    assert done.returncode == 0, done.stderr
    results = json.loads(out.read_text())
    assert set(results) == {"contract", "config", "requests", "summary"} and results["contract"] == 4
    assert [r["index"] for r in results["requests"]] == list(range(8))
    summary = results["summary"]
    assert (summary["n"], summary["ok"], summary["ttft_s"]["n"], summary["ttft_s"]["p99_is_max"]) == (8, 8, 8, True)
    assert summary["ttft_s"]["p99"] == summary["ttft_s"]["max"] == max(r["ttft_s"] for r in results["requests"])
    table = done.stdout
    assert "(max)" in table and "not one user's speed" in table
    ttft_row = next(line for line in table.splitlines() if line.strip().startswith("TTFT (s)"))
    assert ttft_row.split()[2] == "8"  # n beside the percentiles


def test_a_run_where_every_request_fails_still_completes(fake_server, tmp_path):
    server = fake_server(scenario="server-error")
    out = tmp_path / "results.json"
    done = cli(*flags(server.openai_base_url, out, requests=2))
    assert done.returncode == 0
    results = json.loads(out.read_text())
    assert results["summary"]["failed"] == 2 and results["summary"]["ttft_s"]["p50"] is None
    assert "http_status 500" in done.stdout


def test_bad_flags_are_named_without_a_traceback(tmp_path):
    out = tmp_path / "r.json"
    for bad, named in [(["--requests", "0"], "--requests"), (["--concurrency", "many"], "--concurrency"),
                       (["--base-url", "localhost:8000"], "--base-url"),
                       (["--output", str(tmp_path / "missing" / "r.json")], "--output")]:
        args = flags("http://127.0.0.1:9/v1", out)
        flag = bad[0]
        i = args.index(flag)
        args[i:i + 2] = bad
        done = cli(*args)
        assert done.returncode == 2, (bad, done.stderr)
        assert named in done.stderr and "Traceback" not in done.stderr
    missing = cli("--model", "m")
    assert missing.returncode == 2 and "--base-url" in missing.stderr


def test_the_module_runs_as_the_grader_runs_it():
    done = subprocess.run([sys.executable, "-m", "loadgen", "--requests", "0"], cwd=SUBMISSION,
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 2 and "--requests" in done.stderr and "Traceback" not in done.stderr
    assert "python -m loadgen" in done.stderr  # its usage line names the command as it is run
