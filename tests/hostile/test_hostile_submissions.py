"""Hostile submissions graded end to end by `grader grade` on this machine as it is (the cgroup-v1
row of the matrix): each ends in a report with a clear reason, and leaves nothing behind
(processes, listening ports, cgroups, temporary folders). The cases and their checks are in
hostile_cases.py; the other rows (cgroup v2, no writable cgroups, user namespaces) are in
test_hostile_matrix.py.

The sandbox's limits themselves are tested in tests/rooms/sandbox/test_sandbox.py; here the whole grade is run
on a submission written to break it.

CI grades each behaviour once, with the slow ones (a busy loop, a sleeper) run as the gateway,
whose start is given 20 s. `make hostile-full` (HOSTILE_FULL=1) adds them as the load generator,
where only the CPU limit or the 90 s wall clock ends them.
"""

from __future__ import annotations

import os
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
from hostile_cases import CASES, NEVER_ENDING, SLOW, Case, grade_case
from hostile_grading import Snapshot, left_behind
from hosts import unavailable

FULL = os.environ.get("HOSTILE_FULL") == "1"
ROW = "cgroup-v1"


@pytest.fixture(autouse=True)
def _this_row() -> None:
    if why := unavailable(ROW):
        pytest.skip(f"{ROW}: {why}")


@pytest.mark.slow
@pytest.mark.sampled(5)  # a sample each run (tests/sampling.py)
@pytest.mark.parametrize("case", CASES + (SLOW if FULL else []), ids=lambda case: case.id)
@pytest.mark.rotating(49)
def test_a_hostile_submission_is_graded_and_leaves_nothing_behind(case: Case, tmp_path: Path) -> None:
    grade_case(case, ROW, tmp_path)


@pytest.mark.slow
@pytest.mark.rotating(59)
def test_submissions_that_never_end_are_stopped_and_leave_nothing_behind(tmp_path: Path) -> None:
    with ThreadPoolExecutor(max_workers=len(NEVER_ENDING)) as pool:
        futures = [pool.submit(grade_case, case, ROW, tmp_path / case.id) for case in NEVER_ENDING]
        for future in futures:
            future.result()


def test_the_leftover_check_sees_each_kind_of_leftover(tmp_path: Path) -> None:
    """The check above can fail: a marked process holding a listening port, a sandbox-named
    cgroup and a temporary file are each reported."""
    marker = f"hostile-selfcheck-{os.getpid()}"
    tmpdir = tmp_path / "grader-tmp"
    before = Snapshot.take(tmpdir)
    fake_pid = 4_000_000 + os.getpid()  # above any real pid: no grader made this cgroup
    own = Path("/proc/self/cgroup").read_text().splitlines()
    pids_path = next((line.split(":", 2)[2] for line in own if line.split(":")[1] == "pids"), None)
    cgroup = Path("/sys/fs/cgroup/pids") / (pids_path or "/").lstrip("/") / f"grader-sandbox-{fake_pid}-1"
    if pids_path is None:  # cgroup v2: one unified tree
        cgroup = Path("/sys/fs/cgroup") / own[0].split(":", 2)[2].lstrip("/") / f"grader-sandbox-{fake_pid}-1"
    code = "import socket,sys,time; s=socket.socket(); s.bind(('127.0.0.1',0)); s.listen(); print(1, flush=True); time.sleep(60)"
    holder = subprocess.Popen([sys.executable, "-c", code, marker], stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "1"
        cgroup.mkdir()
        (tmpdir / "grader-unpack-left").mkdir()
        found = left_behind(before, marker=marker, grader_pid=fake_pid, tmpdir=tmpdir, wait_s=0.5)
    finally:
        holder.kill()
        holder.wait()
        if cgroup.is_dir():
            cgroup.rmdir()
    kinds = sorted({line.split()[0] for line in found})
    assert kinds == ["cgroup", "port", "process", "temporary"], found
