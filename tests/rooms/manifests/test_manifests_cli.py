"""`grader manifests` from the command line: output formats, exit codes, no tracebacks."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from click.testing import CliRunner
from kit_paths import ROOT, TESTS

from grader.cli import main
from grader.manifests import CHECKLIST, FORMAT_VERSION

FIXTURES = TESTS / "fixtures" / "manifests"


def run(*args: str) -> tuple[int, str]:
    result = CliRunner().invoke(main, ["manifests", *args])
    assert result.exception is None or isinstance(result.exception, SystemExit), result.exception
    return result.exit_code, result.output


def test_passing_manifests_exit_zero_with_one_line_per_check() -> None:
    code, out = run(str(FIXTURES / "good.yaml"))
    assert code == 0
    assert out.count("PASS  ") == 2 + len(CHECKLIST)
    assert out.rstrip().endswith(f"{2 + len(CHECKLIST)} of {2 + len(CHECKLIST)} checks passed")


def test_a_failure_exits_one_and_names_resource_path_place_and_fix() -> None:
    code, out = run(str(FIXTURES / "pdb-no-selector.yaml"))
    assert code == 1
    assert "FAIL  pdb-selects-pods" in out
    assert "PodDisruptionBudget/llama spec.selector: no selector" in out
    assert "pdb-no-selector.yaml:" in out
    assert "fix: set spec.selector.matchLabels" in out
    assert out.rstrip().endswith("failed: pdb-selects-pods")


def test_json_output_is_machine_readable() -> None:
    code, out = run(str(FIXTURES / "scaledobject-numeric-threshold.yaml"), "--format", "json")
    assert code == 1
    report = json.loads(out)
    assert report["format_version"] == FORMAT_VERSION
    assert report["passed"] is False and report["summary"]["failed"] == ["schema-valid"]
    check = next(c for c in report["checks"] if c["id"] == "schema-valid")
    failure = next(f for f in check["findings"] if not f["passed"])
    assert failure == {
        "passed": False,
        "message": "expected string, got integer 4",
        "resource": "ScaledObject/llama",
        "path": "spec.triggers[0].metadata.threshold",
        "fix": 'quote it: "4"',
        "file": failure["file"],
        "line": failure["line"],
    }
    assert failure["file"].endswith("scaledobject-numeric-threshold.yaml") and failure["line"] > 1
    assert {d["kind"] for d in report["documents"]} >= {"Deployment", "ScaledObject"}


def test_broken_yaml_is_reported_with_file_and_line_not_a_traceback() -> None:
    code, out = run(str(FIXTURES / "broken-yaml.yaml"))
    assert code == 1
    assert "Traceback" not in out
    assert "FAIL  yaml-parse" in out and "broken-yaml.yaml:" in out


def test_chart_with_values_file(tmp_path: Path) -> None:
    values = tmp_path / "values.yaml"
    values.write_text("model:\n  maxModelLen: 4096\n")
    code, out = run(str(ROOT / "chart"), "--values", str(values))
    assert code == 0, out
    values.write_text("model:\n  maxModelLen: 4096\n  maxModelLenn: 4096\n")
    code, out = run(str(ROOT / "chart"), "--values", str(values))
    assert code == 1
    assert "FAIL  render" in out and "additional properties 'maxModelLenn' not allowed" in out


def test_values_file_with_a_yaml_error_names_its_line(tmp_path: Path) -> None:
    values = tmp_path / "values.yaml"
    values.write_text("model:\n  maxModelLen: 4096\n   servedModelName: x\n")
    code, out = run(str(ROOT / "chart"), "--values", str(values))
    assert code == 1
    assert "FAIL  yaml-parse" in out and "values.yaml:3" in out


def test_usage_errors_exit_two() -> None:
    code, out = run(str(FIXTURES / "good.yaml"), "--values", str(FIXTURES / "good.yaml"))
    assert code == 2 and "--values needs a chart folder" in out
    code, out = run(str(FIXTURES / "does-not-exist.yaml"))
    assert code == 2 and "no such file or folder" in out
    code, _ = run(str(FIXTURES / "good.yaml"), "--format", "xml")
    assert code == 2


def test_allow_kind_option() -> None:
    assert run(str(FIXTURES / "unknown-kind.yaml"))[0] == 1
    assert run(str(FIXTURES / "unknown-kind.yaml"), "--allow-kind", "ServiceMonitor")[0] == 0


def test_exit_status_of_a_real_process() -> None:
    command = [sys.executable, "-c", "from grader.cli import main; main()", "manifests"]
    good = subprocess.run(
        [*command, str(FIXTURES / "good.yaml")], check=False, cwd=ROOT, capture_output=True, text=True
    )
    bad = subprocess.run(
        [*command, str(FIXTURES / "memory-no-limit.yaml"), "--format", "json"],
        check=False,
        cwd=ROOT,
        capture_output=True,
        text=True,
    )
    assert (good.returncode, bad.returncode) == (0, 1), good.stderr + bad.stderr
    assert json.loads(bad.stdout)["summary"]["failed"] == ["memory-limit"]
    assert bad.stderr == ""
