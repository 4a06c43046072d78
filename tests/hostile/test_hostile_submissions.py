"""Hostile submissions graded end to end by `grader grade`: each ends in a report with a clear
reason, and leaves nothing behind (processes, listening ports, cgroups, temporary folders).

The sandbox's limits themselves are tested in tests/test_sandbox.py; here the whole grade is run
on a submission written to break it. Every behaviour bounds itself (a fork loop stops at 3000, a
flood at 3 GiB, a memory hog at 3 GiB, connections at 5000), so a broken sandbox cannot take the
machine down. Nothing is ever sent to an address that is not loopback.

CI grades each behaviour once, with the slow ones (a busy loop, a sleeper) run as the gateway,
whose start is given 20 s. `make hostile-full` (HOSTILE_FULL=1) adds them as the load generator,
where only the CPU limit or the 90 s wall clock ends them.
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from hostile_grading import ROOT, Snapshot, findings, grade, left_behind, make_submission

FULL = os.environ.get("HOSTILE_FULL") == "1"
ONLY = {"loadgen": "loadgen.runs", "gateway": "gateway.starts"}


def _pids_limited(found: dict[str, Any]) -> None:
    assert found["forked"] < 256 and found["refused"], found  # the pids cgroup (256) refused the fork loop


def _harness_untouched(found: dict[str, Any]) -> None:
    assert "killed" not in found["tried"].values(), found


def _only_its_own(found: dict[str, Any]) -> None:
    # it sees its PID namespace only, and can signal none of it but itself (the harness and the
    # servers are root); the grade goes on and is reported
    assert found["delivered"] == [] and found["refused"] > 0, found


def _nothing_read(found: dict[str, Any]) -> None:
    read = [path for path, what in found["found"].items() if what == "read"]
    assert not read, f"readable from inside the sandbox: {read}"
    assert len(found["found"]) >= 10


def _admin_off(found: dict[str, Any]) -> None:
    assert found["answers"] and all(status == 404 for status in found["answers"].values()), found


def _nothing_written(found: dict[str, Any]) -> None:
    written = [path for path, what in found["written"].items() if what == "written"]
    assert not written, f"written from inside the sandbox: {written}"


def _disk_limited(found: dict[str, Any]) -> None:
    assert found["written_mib"] <= 512 and found["error"], found  # the 512 MiB tmpfs, or RLIMIT_FSIZE


def _connections_limited(found: dict[str, Any]) -> None:
    assert found["opened"] < 5000 and found["error"], found  # RLIMIT_NOFILE


def _loopback_only(found: dict[str, Any]) -> None:
    assert found["interfaces"] == ["lo"] and found["sys_class_net"] in (["lo"], None), found
    # IPv4 routes (iface, destination, gateway...): none, or only through lo
    assert all(line.split()[0] == "lo" for line in found["routes"]), found["routes"]
    assert found["routes6_off_loopback"] == [], found


@dataclass(frozen=True)
class Case:
    behaviour: str
    part: str
    reason: str  # what the criterion's output must say
    args: tuple[str, ...] = ()
    check: Callable[[dict[str, Any]], None] | None = None  # on the script's own findings


NEVER_ENDING = [  # graded side by side: each costs the gateway's 20 s start timeout
    Case("infinite_loop", "gateway", "nothing listened"),
    Case("sleeper", "gateway", "nothing listened"),
]
CASES = [
    Case("fork_bomb", "loadgen", "no results file", check=_pids_limited),
    Case("flood", "loadgen", "output cap", args=("stdout",)),
    Case("flood", "loadgen", "output cap", args=("stderr",)),
    Case("memory_hog", "loadgen", "memory limit"),
    Case("daemon", "loadgen", "no results file"),
    Case("kill_parent", "loadgen", "no results file", check=_harness_untouched),
    Case("signal_all", "loadgen", "no results file", check=_only_its_own),
    Case("read_secrets", "loadgen", "no results file", check=_nothing_read),
    Case("admin", "loadgen", "no results file", check=_admin_off),
    Case("write_outside", "loadgen", "no results file", check=_nothing_written),
    Case("fill_disk", "loadgen", "no results file", check=_disk_limited),
    Case("connections", "loadgen", "no results file", check=_connections_limited),
    Case("network", "loadgen", "no results file", check=_loopback_only),
]
SLOW = [
    Case("infinite_loop", "loadgen", "cpu limit|wall timeout"),
    Case("sleeper", "loadgen", "wall timeout"),
]


def _id(case: Case) -> str:
    return "-".join([case.behaviour, *case.args, case.part])


def _id(case: Case) -> str:
    return "-".join([case.behaviour, *case.args, case.part])


def _grade_hostile(case: Case, tmp_path: Path) -> None:
    """Grade one hostile submission and check its report, its findings and what it left."""
    out = tmp_path / "out"
    outside = tmp_path / "another-candidate"
    outside.mkdir(parents=True)
    (outside / "submission.yaml").write_text("contract: 1\n")
    secrets = {
        "read": [str(ROOT / "submissions" / "reference" / "submission.yaml"), str(ROOT / "submissions" / "chaff"),
                 str(ROOT / "grader" / "rubric.yaml"), str(ROOT / "grader" / "hidden" / "sizing_sets.yaml"),
                 str(ROOT / "grader" / "criteria" / "truth.py"), str(outside / "submission.yaml"), str(out)],
        "write": [str(ROOT / "hostile-was-here"), str(outside / "hostile-was-here"), str(tmp_path / "hostile-was-here")],
    }
    submission, marker = make_submission(tmp_path / "subs", case.behaviour, part=case.part, args=case.args,
                                         secrets=secrets)
    secrets["write"].append(str(submission / "hostile-was-here"))
    tmpdir = tmp_path / "grader-tmp"
    before = Snapshot.take(tmpdir)

    graded = grade(submission, out, only=(ONLY[case.part],), tmpdir=tmpdir)

    assert graded.exit_code == 0, f"grader grade exited {graded.exit_code}: {graded.stderr[-3000:]}"
    assert graded.report is not None and graded.report["extra_data"]["kit"]["sandboxed"] is True
    result = graded.criterion(ONLY[case.part])
    assert result["status"] == "failed" and result["score"] == 0, result["output"]
    assert any(why in result["output"] for why in case.reason.split("|")), result["output"]
    if case.check is not None:
        case.check(findings(result))
    assert left_behind(before, marker=marker, grader_pid=graded.pid, tmpdir=tmpdir) == []
    for path in secrets["write"]:
        assert not Path(path).exists(), f"{path} was written"


@pytest.mark.parametrize("case", CASES + (SLOW if FULL else []), ids=_id)
def test_a_hostile_submission_is_graded_and_leaves_nothing_behind(case: Case, tmp_path: Path) -> None:
    _grade_hostile(case, tmp_path)


def test_submissions_that_never_end_are_stopped_and_leave_nothing_behind(tmp_path: Path) -> None:
    with ThreadPoolExecutor(max_workers=len(NEVER_ENDING)) as pool:
        futures = [pool.submit(_grade_hostile, case, tmp_path / _id(case)) for case in NEVER_ENDING]
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
