"""Faults in the grader itself: its sandbox (and the fake server in it) killed mid-criterion, its
output folder's disk full, and `grader grade` interrupted with SIGINT. Each ends with a report or
a clear one-line error, leaves no process, cgroup or temporary folder, and a rerun into the same
output folder gives a whole, valid report.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from kit_paths import TESTS

sys.path.insert(0, str(TESTS / "hostile"))
from hostile_grading import GRADER, ROOT, Snapshot, grade, left_behind, processes_with

pytestmark = pytest.mark.slow

SLOW_LOADGEN = "import time; time.sleep(10)"


def _submission(tmp_path: Path, name: str) -> tuple[Path, str]:
    """A submission whose load generator sleeps 10 s, so the grader can be hit while it runs."""
    folder = tmp_path / name
    folder.mkdir()
    marker = f"fault-{name}-{os.getpid()}"
    data = {
        "contract": 1,
        "candidate": "faults",
        "loadgen": {
            "command": ["python", "-c", SLOW_LOADGEN, marker],
            "test_command": ["python", "-c", "pass"],
            "percentile": "m:f",
        },
        "gateway": {"command": ["python", "-c", "pass"]},
        "manifests": {"values": "v.yaml"},
        "sizing": {"command": ["python", "-c", "pass"]},
        "memo": "MEMO.md",
    }
    (folder / "submission.yaml").write_text(json.dumps(data))
    return folder, marker


def _start(submission: Path, out: Path, tmpdir: Path) -> subprocess.Popen[str]:
    tmpdir.mkdir(exist_ok=True)
    return subprocess.Popen(
        [*GRADER, "grade", "--seed", "0", str(submission), "--out", str(out), "--only", "loadgen.runs"],
        cwd=ROOT,
        env={**os.environ, "TMPDIR": str(tmpdir)},
        text=True,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )


def _wait_for(marker: str, proc: subprocess.Popen[str], timeout_s: float = 60) -> None:
    deadline = time.monotonic() + timeout_s
    while not processes_with(f"{SLOW_LOADGEN} {marker}"):
        assert proc.poll() is None, f"grader ended early: {proc.communicate()}"
        assert time.monotonic() < deadline, "the candidate's command never started"
        time.sleep(0.1)


def _descendants(pid: int) -> list[int]:
    out, todo = [], [pid]
    while todo:
        current = todo.pop()
        for task in Path(f"/proc/{current}/task").glob("*"):
            try:
                children = [int(c) for c in (task / "children").read_text().split()]
            except OSError:
                continue
            out += children
            todo += children
    return out


def _cmdline(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode()
    except OSError:
        return ""


def _assert_rerun_is_whole(submission: Path, out: Path, tmp_path: Path) -> None:
    again = grade(submission, out, only=("loadgen.runs",), tmpdir=tmp_path / "rerun-tmp", timeout_s=180)
    assert again.exit_code == 0, again.stderr[-2000:]
    assert again.report is not None and again.criterion("loadgen.runs")["status"] == "failed"
    assert {p.name for p in out.iterdir()} >= {"report.json", "junit.xml", "report.html"}
    assert (out / "report.html").read_text().rstrip().endswith("</html>")


@pytest.mark.rotating(25)
def test_the_sandbox_killed_mid_criterion_gives_an_inconclusive_report(tmp_path: Path) -> None:
    submission, marker = _submission(tmp_path, "killed")
    tmpdir, out = tmp_path / "tmp", tmp_path / "out"
    before = Snapshot.take(tmpdir)
    proc = _start(submission, out, tmpdir)
    _wait_for(marker, proc)
    # the harness holds the fake server: killing it kills the server mid-run
    harness = [p for p in _descendants(proc.pid) if "grader.sandbox.harness" in _cmdline(p)]
    assert harness, "no harness process found under the grader"
    os.kill(harness[0], signal.SIGKILL)
    _, stderr = proc.communicate(timeout=120)
    assert proc.returncode == 0, stderr[-2000:]
    report = json.loads((out / "report.json").read_text())
    (result,) = report["extra_data"]["kit"]["criteria"]
    assert result["status"] == "inconclusive" and result["score"] == 0
    assert "could not finish the loadgen section" in result["output"] and "a person should look" in result["output"]
    assert "Traceback" in result["evidence"]["logs"]
    assert left_behind(before, marker=marker, grader_pid=proc.pid, tmpdir=tmpdir) == []
    _assert_rerun_is_whole(submission, out, tmp_path)


@pytest.mark.rotating(43)
def test_sigint_stops_the_grade_cleanly_and_a_rerun_is_whole(tmp_path: Path) -> None:
    submission, marker = _submission(tmp_path, "interrupted")
    tmpdir, out = tmp_path / "tmp", tmp_path / "out"
    before = Snapshot.take(tmpdir)
    proc = _start(submission, out, tmpdir)
    _wait_for(marker, proc)
    started = time.monotonic()
    proc.send_signal(signal.SIGINT)
    _, stderr = proc.communicate(timeout=90)
    took = time.monotonic() - started
    assert proc.returncode != 0, "an interrupted grade must not look like a finished one"
    assert "Traceback" not in stderr, stderr[-3000:]
    assert "Aborted" in stderr or "interrupted" in stderr.lower(), stderr[-2000:]
    assert took < 20, f"stopping took {took:.0f} s"
    assert not (out / "report.json").exists()  # no report that could be taken for a grade
    assert left_behind(before, marker=marker, grader_pid=proc.pid, tmpdir=tmpdir) == []
    _assert_rerun_is_whole(submission, out, tmp_path)


@pytest.fixture
def small_disk(tmp_path: Path):  # type: ignore[no-untyped-def]
    """A 64 KiB tmpfs: big enough for a folder, too small for the reports."""
    mount = tmp_path / "small-disk"
    mount.mkdir()
    done = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", "size=64k", "tmpfs", str(mount)], check=False, capture_output=True, text=True
    )
    assert done.returncode == 0, f"cannot mount a tmpfs here (the test needs root): {done.stderr.strip()}"
    try:
        yield mount
    finally:
        subprocess.run(["umount", "-l", str(mount)], check=False)


@pytest.mark.rotating(10)
def test_a_full_output_disk_is_a_clear_error_and_a_rerun_is_whole(tmp_path: Path, small_disk: Path) -> None:
    folder = tmp_path / "quick"
    folder.mkdir()
    (folder / "submission.yaml").write_text(
        json.dumps(
            {
                "contract": 1,
                "loadgen": {
                    "command": ["python", "-c", "print('x' * 200000)"],
                    "test_command": ["true"],
                    "percentile": "m:f",
                },
                "gateway": {"command": ["true"]},
                "manifests": {"values": "v.yaml"},
                "sizing": {"command": ["true"]},
                "memo": "MEMO.md",
            }
        )
    )
    (small_disk / "filler").write_bytes(b"\0" * (60 * 1024))  # leave about 4 KiB
    out = small_disk / "out"
    graded = grade(folder, out, only=("loadgen.runs",), tmpdir=tmp_path / "tmp", timeout_s=180)
    assert graded.exit_code == 2, (graded.exit_code, graded.stderr[-2000:])
    assert "No space left on device" in graded.stderr and "Traceback" not in graded.stderr, graded.stderr[-2000:]
    errors = [line for line in graded.stderr.splitlines() if line.startswith("Error:")]
    assert len(errors) == 1 and errors[0].endswith("No space left on device"), graded.stderr
    left = out / "report.json"
    if left.exists():  # a report cut short by the full disk must not pass for a grade
        json.loads(left.read_text())
    (small_disk / "filler").unlink()
    _assert_rerun_is_whole(folder, out, tmp_path)
