"""grader grade-many over the reference and chaff in the real sandbox: the ranking, resumption after a kill,
and grader human-score folding a person's points into a report and the round's summary."""

from __future__ import annotations

import csv
import json
import os
import signal
import subprocess
import sys
import tarfile
import time
from pathlib import Path

import pytest
import yaml
from grader_cli import run_grader
from kit_paths import ROOT

from grader.kit.chaff import materialize, read_chaff
from grader.round.many import ManyError, find_submissions, finished

SUBMISSIONS = ROOT / "submissions"
CHAFF = ["manifests-no-gpu", "manifests-pdb-no-selector", "sizing-gpu-price-constant", "sizing-peak-factor-ignored"]
ONLY = ["--only", "manifests", "--only", "sizing"]  # graded from the submission's files and one sizing command
WEIGHTS = {
    c["id"]: float(c["weight"])
    for c in yaml.safe_load((ROOT / "grader" / "rubric" / "rubric.yaml").read_text())["criteria"]
}
SELECTED = [cid for cid in WEIGHTS if cid.startswith(("manifests.", "sizing."))]


@pytest.fixture(scope="module")
def round_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A hiring round as it arrives: the reference as a .tar.gz, each chaff a folder."""
    folder = tmp_path_factory.mktemp("round")
    with tarfile.open(folder / "reference.tar.gz", "w:gz") as tar:
        tar.add(
            SUBMISSIONS / "reference",
            arcname="reference",
            filter=lambda info: None if "__pycache__" in info.name else info,
        )
    for name in CHAFF:
        materialize(SUBMISSIONS / "chaff" / name, folder / name)
    return folder


def _rows(out: Path) -> list[dict[str, str]]:
    with (out / "grades.csv").open(newline="", encoding="utf-8") as f:
        return list(csv.DictReader(f))


def _stamp(folder: Path) -> tuple[int, int, str]:
    report = folder / "report.json"
    return (
        report.stat().st_ino,
        report.stat().st_mtime_ns,
        json.loads(report.read_text())["extra_data"]["kit"]["started"],
    )


@pytest.mark.slow
@pytest.mark.rotating(53)
def test_grade_many_ranks_resumes_after_a_kill_and_keeps_finished_grades(round_dir: Path, tmp_path: Path) -> None:
    out = tmp_path / "grades"
    argv = [sys.executable, "-m", "grader.cli", "grade-many", str(round_dir), "--out", str(out), "--jobs", "1", *ONLY]
    names = ["reference", *CHAFF]
    first = subprocess.Popen(argv, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, start_new_session=True)
    deadline = time.monotonic() + 60
    try:
        while time.monotonic() < deadline and first.poll() is None:
            if any(finished(out / n) for n in names):
                break
            time.sleep(0.05)
    finally:
        if first.poll() is None:
            os.killpg(first.pid, signal.SIGKILL)  # the run's own process group: the grader and its sandboxes
        first.wait(timeout=10)
    done_before = [n for n in names if finished(out / n)]
    assert done_before, "no grade finished within 60 s"
    assert len(done_before) < len(names), "every grade finished before the kill; nothing left to resume"
    assert not (out / "grades.csv").exists()
    stamps = {n: _stamp(out / n) for n in done_before}

    second = run_grader("grade-many", round_dir, "--out", out, "--jobs", "2", *ONLY)
    assert second.returncode == 0, second.stderr
    assert f"{len(names) - len(done_before)} to grade, {len(done_before)} finished grades kept" in second.stderr
    for name in done_before:
        assert _stamp(out / name) == stamps[name], f"{name} was graded again"
    assert all(finished(out / n) for n in names)
    assert not (out / ".partial").exists()

    rows = _rows(out)
    assert sorted(r["name"] for r in rows) == sorted(names)  # one row each, the CSV whole
    by_name = {r["name"]: r for r in rows}
    full = sum(WEIGHTS[c] for c in SELECTED)
    assert rows[0]["name"] == "reference" and rows[0]["rank"] == "1" and float(rows[0]["score"]) == pytest.approx(full)
    assert all(int(r["rank"]) > 1 for r in rows[1:]), "a chaff tied with the reference"
    scores = [float(r["score"]) for r in rows]
    assert scores == sorted(scores, reverse=True)
    for name in CHAFF:  # each chaff loses its selected targets and keeps every other selected criterion
        targets = {t for t in read_chaff(SUBMISSIONS / "chaff" / name).targets if t in SELECTED}
        assert targets, name
        for cid in SELECTED:
            got = float(by_name[name][cid])
            assert (got < WEIGHTS[cid]) if cid in targets else (got == pytest.approx(WEIGHTS[cid])), (name, cid, got)

    index = (out / "index.html").read_text(encoding="utf-8")
    for name in names:
        assert f'href="{name}/report.html"' in index
    assert "<svg" in index and "<script" not in index and "https://" not in index
    for cid in ("manifests.gpu-request", "manifests.pdb-selects-pods", "sizing.cost-per-million"):
        assert cid in index  # the most-missed chart names what the chaff lost


@pytest.mark.slow
@pytest.mark.rotating(48)
def test_finished_grades_are_kept_only_for_the_same_criteria_and_seed(round_dir: Path, tmp_path: Path) -> None:
    """A round's seed is drawn for it, kept in round.json and written in every report and in grades.csv; the
    round resumed keeps it, and another seed for the same round is refused (it would be two exams)."""
    out = tmp_path / "grades"
    done = run_grader("grade-many", round_dir / "manifests-no-gpu", "--out", out, "--only", "manifests")
    assert done.returncode == 0, done.stderr
    seed = json.loads((out / "round.json").read_text())["seed"]
    assert f"the round's seed: {seed}" in done.stderr
    assert json.loads((out / "manifests-no-gpu" / "report.json").read_text())["extra_data"]["kit"]["seed"] == seed
    assert [r["seed"] for r in _rows(out)] == [str(seed)]
    refused = run_grader(
        "grade-many", round_dir / "manifests-no-gpu", "--out", out, "--only", "manifests", "--seed", seed + 1
    )
    assert refused.returncode == 2 and f"graded at seed {seed}" in refused.stderr
    other = tmp_path / "another-round"
    assert (
        run_grader("grade-many", round_dir / "manifests-no-gpu", "--out", other, "--only", "manifests").returncode == 0
    )
    assert json.loads((other / "round.json").read_text())["seed"] != seed, "each round draws its own exam"
    folder = out / "manifests-no-gpu"
    manifests = [c for c in SELECTED if c.startswith("manifests.")]
    assert finished(folder, criteria=manifests, seed=seed)
    assert not finished(folder, criteria=manifests, seed=seed + 1)
    assert not finished(folder, criteria=SELECTED, seed=seed)
    stamp = _stamp(folder)
    again = run_grader("grade-many", round_dir / "manifests-no-gpu", "--out", out, "--only", "manifests")
    assert "0 to grade, 1 finished grades kept" in again.stderr and _stamp(folder) == stamp
    forced = run_grader("grade-many", round_dir / "manifests-no-gpu", "--out", out, "--only", "manifests", "--force")
    assert forced.returncode == 0 and "1 to grade, 0 finished grades kept" in forced.stderr
    assert _stamp(folder)[1] != stamp[1]
    (folder / "report.html").unlink()  # a grade cut short between two report files is not finished
    assert not finished(folder, criteria=manifests, seed=seed)


def test_submissions_are_found_by_folder_archive_and_round(round_dir: Path, tmp_path: Path) -> None:
    entries = find_submissions([round_dir])
    assert [e.name for e in entries] == sorted(["reference", *CHAFF])
    assert [e.name for e in find_submissions([round_dir / "manifests-no-gpu"])] == ["manifests-no-gpu"]
    (tmp_path / "manifests-no-gpu.zip").write_bytes(b"")
    with pytest.raises(ManyError, match="share the report folder 'manifests-no-gpu'"):
        find_submissions([round_dir, tmp_path / "manifests-no-gpu.zip"])
    (tmp_path / "empty").mkdir()
    no_yaml = find_submissions([tmp_path / "empty"])  # a folder with nothing in it is one (broken) submission
    assert [e.name for e in no_yaml] == ["empty"]
    bad = run_grader("grade-many", tmp_path / "missing", "--out", tmp_path / "o")
    assert bad.returncode == 2 and "missing: no such file or folder" in bad.stderr and "Traceback" not in bad.stderr


@pytest.mark.slow
@pytest.mark.rotating(37)
def test_human_score_folds_points_into_the_report_and_the_summary(tmp_path: Path) -> None:
    out = tmp_path / "grades"
    done = run_grader("grade-many", SUBMISSIONS / "reference", "--out", out, "--only", "memo.front-matter")
    assert done.returncode == 0, done.stderr
    report = out / "reference" / "report.json"
    before = json.loads(report.read_text())
    checklist = before["extra_data"]["human"]["checklist"]
    assert len(checklist) >= 2 and all(item["score"] is None for item in checklist)

    scored = run_grader("human-score", report, "human.1=2/3", f"{checklist[1]['item']}=1.5/2")
    assert scored.returncode == 0, scored.stderr
    after = json.loads(report.read_text())
    assert after["score"] == pytest.approx(before["score"] + 2 + 1.5)
    assert after["max_score"] == pytest.approx(before["max_score"] + 3 + 2)
    assert [(i["score"], i["max_score"]) for i in after["extra_data"]["human"]["checklist"][:2]] == [(2, 3), (1.5, 2)]
    assert after["extra_data"]["human"]["applied"] is True

    merged = run_grader("grade-many", "--merge", out, "--out", out)
    assert merged.returncode == 0, merged.stderr
    row = _rows(out)[0]
    assert float(row["human_score"]) == pytest.approx(3.5)
    assert float(row["score"]) == pytest.approx(after["score"])

    for bad, why in [
        ("human.1", "expected ITEM=SCORE/MAX"),
        ("human.1=2", "SCORE/MAX"),
        ("human.1=two/3", "must be numbers"),
        ("human.1=4/3", "must lie in 0..max_score"),
        ("human.99=1/1", "no checklist item 'human.99'"),
        ("human.1=nan/3", "finite"),
    ]:
        failed = run_grader("human-score", report, bad)
        assert failed.returncode == 1, (bad, failed.stderr)
        lines = failed.stderr.strip().splitlines()
        assert len(lines) == 1 and why in lines[0], (bad, failed.stderr)
    assert json.loads(report.read_text()) == after  # a refused score changes nothing
    missing = run_grader("human-score", tmp_path / "nope.json", "human.1=1/1")
    assert missing.returncode == 1 and "no such file" in missing.stderr
