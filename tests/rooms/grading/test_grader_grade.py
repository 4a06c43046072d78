"""`grader grade` from the command line, as a hiring team runs it: archives, broken contracts, exit codes."""

from __future__ import annotations

import io
import json
import shutil
import subprocess
import sys
import tarfile
from pathlib import Path

import jsonschema
import pytest
import yaml
from kit_paths import ROOT

REFERENCE = ROOT / "submissions" / "reference"
REPORT_SCHEMA = json.loads((ROOT / "schemas" / "grader" / "report.schema.json").read_text())


def _grade(*args: str | Path) -> subprocess.CompletedProcess[str]:
    """`grader grade ARGS` at seed 0, unless the test names its own seed."""
    seed = () if "--seed" in args else ("--seed", "0")
    return subprocess.run(
        [sys.executable, "-m", "grader.cli", "grade", *seed, *map(str, args)],
        check=False,
        capture_output=True,
        text=True,
        timeout=300,
        cwd=ROOT,
    )


def _copy_reference(dest: Path) -> Path:
    shutil.copytree(REFERENCE, dest, ignore=shutil.ignore_patterns("__pycache__", ".pytest_cache"))
    return dest


@pytest.mark.slow
def test_an_archive_is_graded_and_every_report_is_written(tmp_path: Path) -> None:
    archive = tmp_path / "candidate.tar.gz"
    with tarfile.open(archive, "w:gz") as tar:
        tar.add(_copy_reference(tmp_path / "sub"), arcname="candidate")
    out = tmp_path / "out"
    done = _grade(archive, "--out", out, "--only", "loadgen.runs", "--only", "loadgen.ttft")
    assert done.returncode == 0, done.stderr
    assert "PASS" in done.stdout and "loadgen.ttft" in done.stdout and "report.html" in done.stdout
    report = json.loads((out / "report.json").read_text())
    jsonschema.validate(report, REPORT_SCHEMA)
    assert report["score"] == report["max_score"] == 3
    assert [t["name"].split(":")[0] for t in report["tests"]] == ["loadgen.runs", "loadgen.ttft"]
    assert (out / "junit.xml").read_text().startswith("<?xml")
    assert "loadgen.ttft" in (out / "report.html").read_text()


@pytest.mark.slow
def test_a_broken_part_skips_only_its_own_criteria(tmp_path: Path) -> None:
    sub = _copy_reference(tmp_path / "sub")
    data = yaml.safe_load((sub / "submission.yaml").read_text())
    data["gateway"]["command"] = "python gateway.py"  # a string where the contract wants argv
    (sub / "submission.yaml").write_text(yaml.safe_dump(data))
    out = tmp_path / "out"
    done = _grade(sub, "--out", out, "--only", "loadgen.runs")
    assert done.returncode == 0, done.stderr
    report = json.loads((out / "report.json").read_text())
    assert report["score"] == report["max_score"] == 1
    assert any("gateway.command" in p for p in report["extra_data"]["kit"]["contract_problems"])

    data["loadgen"]["command"] = []
    (sub / "submission.yaml").write_text(yaml.safe_dump(data))
    done = _grade(sub, "--out", out, "--only", "loadgen.runs")
    assert done.returncode == 0, done.stderr
    report = json.loads((out / "report.json").read_text())
    (test,) = report["tests"]
    assert report["score"] == 0 and "loadgen.command" in test["output"] and "skipped" in test["tags"]


def test_an_archive_that_escapes_its_folder_gets_a_report_not_a_crash(tmp_path: Path) -> None:
    archive = tmp_path / "evil.tar.gz"
    with tarfile.open(archive, "w:gz") as tar:
        info = tarfile.TarInfo("../../outside.txt")
        info.size = 3
        tar.addfile(info, io.BytesIO(b"hi\n"))
    out = tmp_path / "out"
    done = _grade(archive, "--out", out, "--only", "loadgen.runs")
    assert done.returncode == 0, done.stderr
    report = json.loads((out / "report.json").read_text())
    assert report["score"] == 0 and "../../outside.txt" in report["tests"][0]["output"]
    assert not (tmp_path.parent / "outside.txt").exists()


def test_the_grader_says_what_stopped_it(tmp_path: Path) -> None:
    missing = _grade(tmp_path / "nope", "--out", tmp_path / "out")
    assert missing.returncode == 2 and "no such file or folder" in missing.stderr
    override = tmp_path / "team.yaml"
    override.write_text("rubric: 1\ncriteria:\n  loadgen.ttft: {weight: lots}\n")
    bad = _grade(REFERENCE, "--out", tmp_path / "out", "--override", override)
    assert bad.returncode == 2 and "criteria.loadgen.ttft.weight" in bad.stderr and "Traceback" not in bad.stderr
    unknown = _grade(REFERENCE, "--out", tmp_path / "out", "--only", "loadgen.nothing")
    assert unknown.returncode == 2 and "loadgen.nothing" in unknown.stderr


@pytest.mark.slow
def test_a_section_the_grader_cannot_run_is_inconclusive_and_the_grade_goes_on(tmp_path: Path) -> None:
    from grader.grading.grade import GradeRequest, grade
    from grader.rubric import DEFAULT_RUBRIC

    rubric = yaml.safe_load(DEFAULT_RUBRIC.read_text())
    rubric["scenarios"]["role-chunk"]["server"]["no_such_setting"] = 1  # the fake server refuses to start
    path = tmp_path / "rubric.yaml"
    path.write_text(yaml.safe_dump(rubric))
    lines: list[str] = []
    result = grade(
        GradeRequest(
            REFERENCE, tmp_path / "out", only=("loadgen.runs", "loadgen.role-chunk"), rubric=path, echo=lines.append
        )
    )
    by_id = {c.id: c for c in result.criteria}
    broken = by_id["loadgen.role-chunk"]
    assert broken.status == "inconclusive" and broken.score == 0
    assert "no_such_setting" in broken.output and "Traceback" in broken.evidence.logs
    assert by_id["loadgen.runs"].status == "passed"  # judged before the failure, and kept
    assert (tmp_path / "out" / "report.html").is_file()
