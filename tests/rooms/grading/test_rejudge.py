"""`grader rejudge`: the stored runs judged again, with nothing run, under the kit's rubric or an override.

The records are the reference's recorded runs (tests/fixtures/runs/reference); the same records under
the same rubric give the same scores and statuses, and a tolerance tightened past a criterion's
margin fails exactly that criterion.
"""

from __future__ import annotations

import gzip
import hashlib
import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from recorded import FIXTURES

from grader.grading.rejudge import grade_of, rejudge
from grader.outcome import CriterionResult
from grader.records.book import RecordBook
from grader.rubric import load_rubric

GRADER = [sys.executable, "-m", "grader.cli"]


@pytest.fixture
def report_dir(tmp_path: Path) -> Path:
    """A report folder holding only the reference's run records, as `grader grade` leaves them."""
    folder = tmp_path / "graded"
    shutil.copytree(FIXTURES / "reference", folder / "runs", ignore=shutil.ignore_patterns("source.txt"))
    return folder


def _statuses(report: Path) -> dict[str, tuple[str, float]]:
    data = json.loads(report.read_text())
    return {t["extra_data"]["id"]: (t["extra_data"]["status"], t["score"]) for t in data["tests"]}


def test_rejudge_writes_the_three_reports_with_the_same_scores_and_statuses(report_dir: Path, tmp_path: Path) -> None:
    book = RecordBook.read(report_dir / "runs")
    rubric = load_rubric()
    expected = {c.id: (c.status, c.score) for c in grade_of(book, rubric).criteria}
    done = subprocess.run(
        [*GRADER, "rejudge", str(report_dir), "--out", str(tmp_path / "again")],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    again = tmp_path / "again"
    assert {p.name for p in again.iterdir()} >= {"report.json", "junit.xml", "report.html", "runs"}
    assert _statuses(again / "report.json") == expected
    assert all(status == "passed" for status, _ in expected.values())
    # the new folder's records can be judged again in their turn
    assert RecordBook.read(again / "runs").index == book.index


def test_a_tightened_tolerance_fails_exactly_the_criterion_whose_margin_exceeds_it(
    report_dir: Path, tmp_path: Path
) -> None:
    rubric = load_rubric()
    graded = {c.id: c for c in grade_of(RecordBook.read(report_dir / "runs"), rubric).criteria}
    # a criterion judged on one relative tolerance, with a margin to tighten
    name = "loadgen.throughput"
    margin, rel = graded[name].margin, rubric.criterion(name).tol("rel")
    assert margin is not None and 0 < margin < 0.7, margin

    def rejudged(new_rel: float, out: str) -> dict[str, CriterionResult]:
        override = tmp_path / f"{out}.yaml"
        override.write_text(f"rubric: 1\ncriteria:\n  {name}: {{tolerance: {{rel: {new_rel!r}}}}}\n")
        grade = rejudge(report_dir, override=override, out=tmp_path / out)
        assert _statuses(tmp_path / out / "report.json") == {c.id: (c.status, c.score) for c in grade.criteria}
        return {c.id: c for c in grade.criteria}

    # the error is `margin * rel`; a quarter of it as the tolerance makes the margin 4: a clear fail, no rerun,
    # even where the records say the machine was busy (whose band reaches 3)
    tight = rejudged(rel * margin / 4, "tight")
    assert (tight[name].status, tight[name].score) == ("failed", 0)
    assert {k: (c.status, c.score) for k, c in tight.items() if k != name} == {
        k: (c.status, c.score) for k, c in graded.items() if k != name
    }
    # the error as the tolerance makes the margin 1: borderline, and no rerun was recorded
    edge = rejudged(rel * margin, "edge")
    assert edge[name].status == "inconclusive" and "no rerun was recorded" in edge[name].output


def test_a_folder_without_records_or_with_another_version_is_one_clear_line(report_dir: Path, tmp_path: Path) -> None:
    empty = tmp_path / "empty"
    empty.mkdir()
    done = subprocess.run([*GRADER, "rejudge", str(empty)], capture_output=True, text=True, timeout=60, check=False)
    assert done.returncode == 2 and "no run records here" in done.stderr and "Traceback" not in done.stderr
    record = next((report_dir / "runs").glob("loadgen-baseline.json.gz"))
    data = json.loads(gzip.decompress(record.read_bytes()))
    data["record"] = 99
    raw = gzip.compress(json.dumps(data).encode())
    record.write_bytes(raw)
    # edited in place: the index's digest of what the grade wrote no longer matches
    done = subprocess.run(
        [*GRADER, "rejudge", str(report_dir)], capture_output=True, text=True, timeout=60, check=False
    )
    assert done.returncode == 2 and "Traceback" not in done.stderr
    assert "loadgen-baseline.json.gz: changed since the grade wrote it" in done.stderr
    # written by another grader version, with its index: the version is named
    index_path = report_dir / "runs" / "index.json"
    index = json.loads(index_path.read_text())
    index["digests"][record.name] = hashlib.sha256(raw).hexdigest()
    index_path.write_text(json.dumps(index))
    done = subprocess.run(
        [*GRADER, "rejudge", str(report_dir)], capture_output=True, text=True, timeout=60, check=False
    )
    assert done.returncode == 2 and "Traceback" not in done.stderr
    assert "loadgen-baseline.json.gz: record version 99; this grader reads version 1" in done.stderr


def test_an_override_naming_a_number_the_entry_does_not_give_is_refused(report_dir: Path, tmp_path: Path) -> None:
    override = tmp_path / "bad.yaml"
    override.write_text("rubric: 1\ncriteria:\n  loadgen.runs: {tolerance: {rel: 0.5}}\n")
    done = subprocess.run(
        [*GRADER, "rejudge", str(report_dir), "--rubric", str(override)],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 2 and "loadgen.runs.tolerance.rel" in done.stderr and "Traceback" not in done.stderr


def test_grade_many_rejudges_a_round_keeps_a_persons_points_and_rebuilds_the_summary(
    report_dir: Path, tmp_path: Path
) -> None:
    round_dir = tmp_path / "round"
    for name in ("alice", "bob"):
        shutil.copytree(report_dir, round_dir / name)
        rejudge(round_dir / name)  # the reports a grade leaves beside its records
    human = subprocess.run(
        [*GRADER, "human-score", str(round_dir / "alice" / "report.json"), "human.1=2/3"],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert human.returncode == 0, human.stderr
    override = tmp_path / "weights.yaml"
    override.write_text("rubric: 1\ncriteria:\n  loadgen.ttft: {weight: 10}\n")
    out = tmp_path / "again"
    done = subprocess.run(
        [
            *GRADER,
            "grade-many",
            "--rejudge",
            str(round_dir),
            "--out",
            str(out),
            "--rubric",
            str(override),
            "--jobs",
            "2",
        ],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert "2 of 2 grades re-judged" in done.stderr
    alice, bob = (json.loads((out / n / "report.json").read_text()) for n in ("alice", "bob"))
    weights = {c.id: c.weight for c in load_rubric(override=override).criteria}
    assert bob["max_score"] == pytest.approx(sum(weights.values()))
    assert alice["max_score"] == pytest.approx(sum(weights.values()) + 3)  # the person's 2/3 is still there
    assert alice["extra_data"]["human"]["checklist"][0]["score"] == 2
    csv = (out / "grades.csv").read_text()
    assert "alice" in csv and "bob" in csv
