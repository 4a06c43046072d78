"""Rough edges a new user met: each bad input is one line naming the file, flag or server, never a
traceback; help shows ranges; both CLIs have --version; exit status 2 for usage and missing paths."""

from __future__ import annotations

import shutil
import socket
import subprocess
import sys
from collections.abc import Callable
from importlib import metadata
from pathlib import Path
from typing import Any

import httpx
import jsonschema
import pytest
import yaml
from kit_paths import ROOT

from fake_server import serve
from grader.manifests import check_manifests
from grader.shared.schema_words import explain

BIN = Path(sys.executable).parent


def _cli(*argv: str, cwd: Path | None = None, timeout: float = 60) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(BIN / argv[0]), *argv[1:]], cwd=cwd, capture_output=True, text=True, timeout=timeout, check=False
    )


def _one_line_error(done: subprocess.CompletedProcess[str]) -> str:
    assert done.returncode == 2, (done.returncode, done.stdout, done.stderr)
    assert "Traceback" not in done.stderr + done.stdout
    errors = [line for line in done.stderr.splitlines() if line.startswith("Error: ")]
    assert len(errors) == 1, done.stderr
    return errors[0]


@pytest.mark.parametrize("make_path", [lambda tmp: "/nonexistent-folder/x.jsonl", lambda tmp: str(tmp)])
def test_a_ledger_path_that_cannot_be_written_is_one_line_naming_the_flag(
    tmp_path: Path, make_path: Callable[[Path], str]
) -> None:
    line = _one_line_error(_cli("fake-server", "serve", "--port", "0", "--ledger", make_path(tmp_path)))
    assert "`--ledger`" in line


def test_a_fleet_with_such_a_ledger_names_the_file_and_server(tmp_path: Path) -> None:
    fleet = tmp_path / "fleet.yaml"
    fleet.write_text("servers:\n  local-a:\n    port: 0\n    ledger: /nonexistent-folder/a.jsonl\n")
    line = _one_line_error(_cli("fake-server", "fleet", str(fleet)))
    assert f"{fleet}: servers.local-a:" in line and "does not exist" in line


def test_a_scenario_file_that_is_not_utf8_is_one_line_naming_the_file(tmp_path: Path) -> None:
    bad = tmp_path / "latin1.yaml"
    bad.write_bytes("description: caf\u00e9\n".encode("latin-1"))
    line = _one_line_error(_cli("fake-server", "serve", "--port", "0", "--scenario", str(bad)))
    assert str(bad) in line and "UTF-8" in line


def test_a_fault_error_in_a_scenario_file_names_the_file(tmp_path: Path) -> None:
    bad = tmp_path / "faulty.yaml"
    bad.write_text("faults: [{kind: cutt, after_tokens: 3}]\n")
    line = _one_line_error(_cli("fake-server", "serve", "--port", "0", "--scenario", str(bad)))
    assert str(bad) in line and "faults[0].kind" in line


def test_setting_errors_name_the_flag_not_the_field() -> None:
    line = _one_line_error(_cli("fake-server", "serve", "--port", "0", "--token-rate", "-1"))
    assert "`--token-rate`" in line and "token_rate" not in line


def test_a_port_clash_in_a_fleet_names_the_server(tmp_path: Path) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        fleet = tmp_path / "fleet.yaml"
        fleet.write_text(yaml.safe_dump({"servers": {"free": {"port": 0}, "clashing": {"port": port}}}))
        line = _one_line_error(_cli("fake-server", "fleet", str(fleet)))
    assert "servers.clashing" in line and str(port) in line


def test_serve_help_shows_each_settings_range() -> None:
    done = _cli("fake-server", "serve", "--help")
    text = " ".join(done.stdout.split())
    assert "[range: 1 to 65536]" in text  # --max-num-seqs
    assert "[range: 0.01 to 100000]" in text  # --token-rate


def test_admin_without_the_flag_says_to_add_it() -> None:
    with serve() as server:
        answer = httpx.get(f"{server.base_url}/admin/ledger", timeout=10)
    assert answer.status_code == 404
    assert "--admin" in answer.json()["error"]["message"]


def test_both_clis_have_version() -> None:
    for name in ("fake-server", "grader"):
        done = _cli(name, "--version")
        version = metadata.version("serving-takehome-kit")  # pyproject.toml's, as installed
        assert done.returncode == 0 and done.stdout.strip() == f"{name} {version}", done.stdout


@pytest.mark.parametrize(
    ("schema", "value", "bad_words", "said"),
    [
        ({"type": "object", "maxProperties": 1}, {"a": 1, "b": 2}, "has too many properties", "at most 1 key"),
        ({"type": "string", "not": {"pattern": "^x"}}, "xy", "should not be valid under", "not allowed"),
        ({"type": "integer"}, "two", "is not of type", "must be an integer"),
        ({"type": "array", "minItems": 2}, [1], "is too short", "at least 2 items"),
    ],
)
def test_jsonschema_wording_becomes_a_sentence(
    schema: dict[str, Any], value: object, bad_words: str, said: str
) -> None:
    (error,) = jsonschema.Draft202012Validator(schema).iter_errors(value)
    assert bad_words in error.message  # what jsonschema itself says
    assert bad_words not in explain(error) and said in explain(error)


def test_manifest_type_fix_uses_the_right_article(tmp_path: Path) -> None:
    doc = tmp_path / "d.yaml"
    doc.write_text("apiVersion: v1\nkind: Service\nmetadata: {name: s}\nspec:\n  ports: [{port: eighty}]\n")
    report = check_manifests([doc])
    fixes = [f.fix for f in report.check("schema-valid").findings if not f.passed]
    assert fixes == ["give it an integer value"], fixes


def test_chart_findings_name_the_file_in_the_repository(tmp_path: Path) -> None:
    shutil.copytree(ROOT / "chart", tmp_path / "chart")
    values = (ROOT / "submissions/reference/manifests/values.yaml").read_text()
    assert "    count: 1\n" in values
    (tmp_path / "values.yaml").write_text(values.replace("    count: 1\n", "    count: 0\n"))  # asks for no GPU
    done = _cli("grader", "manifests", "chart", "--values", str(tmp_path / "values.yaml"), cwd=tmp_path, timeout=300)
    assert "at chart/templates/deployment.yaml:" in done.stdout
    assert "vllm/templates" not in done.stdout


def test_grader_check_says_what_the_grade_runs_that_it_does_not(tmp_path: Path) -> None:
    """The self-check is not the exam: before and after it runs, it says the grade also runs hidden criteria,
    unseen variants and unseen sizing inputs, and its report says "public criteria only"."""
    sub = tmp_path / "sub"
    shutil.copytree(ROOT / "submissions" / "reference", sub, ignore=shutil.ignore_patterns("__pycache__"))
    done = _cli("grader", "check", str(sub), "--only", "manifests", "--out", str(tmp_path / "out"), timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr
    before, after = (
        done.stdout.index("The grade also runs what this check does not"),
        done.stdout.index("Not run here:"),
    )
    assert before < done.stdout.index("TOTAL") < after
    assert "unseen variants of each scenario" in done.stdout and "unseen sizing input sets" in done.stdout
    assert "(public criteria only)" in (tmp_path / "out" / "report.html").read_text()


def test_grader_contract_checks_scripts_and_names_the_file_it_checked(tmp_path: Path) -> None:
    sub = tmp_path / "sub"
    shutil.copytree(ROOT / "starter", sub, ignore=shutil.ignore_patterns("__pycache__"))
    done = _cli("grader", "contract", str(sub))
    assert done.returncode == 0 and done.stdout.strip() == f"{sub / 'submission.yaml'}: follows contract 4"
    data = yaml.safe_load((sub / "submission.yaml").read_text())
    data["gateway"]["command"] = ["python", "gateway/missing.py"]
    (sub / "submission.yaml").write_text(yaml.safe_dump(data))
    done = _cli("grader", "contract", str(sub))
    assert done.returncode == 1
    assert "gateway.command: gateway/missing.py does not exist" in done.stderr


@pytest.mark.parametrize(
    "argv",
    [
        ("grader", "contract", "/nonexistent-sub"),
        ("grader", "manifests", "/nonexistent-chart"),
        ("grader", "manifests", "chart", "--schemas", "/nonexistent-schemas"),
        ("grader", "grade", "/nonexistent-sub"),
        ("grader", "check", "/nonexistent-sub"),
        ("grader", "memo", "/nonexistent-memo.md"),
        ("grader", "contract", "starter", "--output", "loadgen-results", "/nonexistent-out.json"),
    ],
)
def test_usage_errors_and_missing_paths_exit_2_with_one_line(argv: tuple[str, ...]) -> None:
    line = _one_line_error(_cli(*argv, cwd=ROOT))
    assert "nonexistent" in line
