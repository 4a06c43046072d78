"""The hostile submissions, what each must end in, and one function that grades one in a row of hosts.py.

Each case grades one behaviour from `behaviours/` and checks four things: the grade ends in a
report whose criterion fails for the expected reason; the script's own findings (nothing read,
nothing written, nothing signalled, limits met); nothing is left on the machine (processes,
listening ports, cgroups, temporary folders); and the report's sandbox line names what the row
enforces (`ROW_LINES`), so that a line that claims a cgroup where an rlimit held, or the reverse,
fails here. In a row where the sandbox refuses to run candidate code (`REFUSED`), the check is that
it said why in one line and ran nothing.

Every behaviour bounds itself (a fork loop stops at 3000, a flood at 3 GiB, a memory hog at
3 GiB, connections at 5000), so a broken sandbox cannot take the machine down. Nothing is ever
sent to an address that is not loopback.
"""

from __future__ import annotations

import os
import re
import shutil
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from hostile_grading import ROOT, Snapshot, findings, grade, left_behind, make_submission
from hosts import ROWS, command

ONLY = {"loadgen": "loadgen.runs", "gateway": "gateway.starts"}


def _pids_limited(found: dict[str, Any]) -> None:
    assert found["forked"] < 256 and found["refused"], found  # pids.max or RLIMIT_NPROC (256)


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
    reason: str  # what the criterion's output must say ("a|b": either)
    args: tuple[str, ...] = ()
    check: Callable[[dict[str, Any]], None] | None = None  # on the script's own findings
    reason_by_rlimit: str = ""  # the reason instead, where an rlimit holds memory (no memory cgroup)

    @property
    def id(self) -> str:
        return "-".join([self.behaviour, *self.args, self.part])


NEVER_ENDING = [  # graded side by side: each costs the gateway's 20 s start timeout
    Case("infinite_loop", "gateway", "nothing listened"),
    Case("sleeper", "gateway", "nothing listened"),
]
CASES = [
    Case("fork_bomb", "loadgen", "no results file", check=_pids_limited),
    Case("flood", "loadgen", "output cap", args=("stdout",)),
    Case("flood", "loadgen", "output cap", args=("stderr",)),
    # RLIMIT_AS makes the allocation fail (MemoryError) where a cgroup kills the command
    Case("memory_hog", "loadgen", "memory limit", reason_by_rlimit="MemoryError"),
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
SLOW = [  # only the CPU limit (120 s) or the 90 s wall clock ends them
    Case("infinite_loop", "loadgen", "cpu limit|wall timeout"),
    Case("sleeper", "loadgen", "wall timeout"),
]
BY_ID = {case.id: case for case in [*NEVER_ENDING, *CASES, *SLOW]}

_EVERY_ROW = [
    "CPU 120 s by rlimit (RLIMIT_CPU",
    "disk 512 MiB by a tmpfs of that size",
    "open files 1024 by rlimit (RLIMIT_NOFILE)",
    "output 8 MiB and wall clock by the harness",
]
# where RLIMIT_NPROC holds the process limit, the candidate has a uid of its own (65000-65533)
_RLIMITS = ["candidate as uid 650", "processes 256 by rlimit (RLIMIT_NPROC", "memory 2048 MiB by rlimit (RLIMIT_AS"]
# What the report's sandbox line must say in each row (and so what each row must enforce).
ROW_LINES = {
    "cgroup-v1": [
        *_EVERY_ROW,
        "candidate as uid 65534",
        "processes 256 by cgroup v1",
        "memory 2048 MiB by cgroup v1",
        "killed at its end by cgroup v1",
    ],
    "cgroup-v2": [
        *_EVERY_ROW,
        *_RLIMITS,
        "killed at its end by cgroup v2 (cgroup.kill)",
        "cgroup v2 has no pids or memory controller",
    ],
    "cgroups-ro": [
        *_EVERY_ROW,
        *_RLIMITS,
        "killed at its end by a sweep of the candidate's uid",
        "(Read-only file system)",
    ],
    "userns-65536": [
        *_EVERY_ROW,
        *_RLIMITS,
        "killed at its end by a sweep of the candidate's uid",
        "(Permission denied)",
    ],
}
REFUSED = {"userns-root": ["uid and gid 65534 are not mapped in this user namespace", "hostUsers: false"]}


def _own(top: Path, uid: int) -> None:
    for dirpath, dirnames, filenames in os.walk(top):
        os.chown(dirpath, uid, uid)
        for name in filenames:
            os.chown(os.path.join(dirpath, name), uid, uid)


def grade_case(case: Case, row: str, tmp_path: Path) -> tuple[str, dict[str, Any] | None]:
    """Grade one hostile submission in `row` and check its report, its findings, its line and what it left.

    Returns the criterion's output and the script's findings (None where it never ran), for the table.
    """
    owner = ROWS[row].owner
    base = tmp_path if owner == 0 else Path(tempfile.mkdtemp(prefix="grader-matrix-", dir="/tmp"))
    try:
        return _grade_case(case, row, base, owner)
    finally:
        if base != tmp_path:
            shutil.rmtree(base, ignore_errors=True)


def _grade_case(case: Case, row: str, base: Path, owner: int) -> tuple[str, dict[str, Any] | None]:
    out = base / "out"
    outside = base / "another-candidate"
    outside.mkdir(parents=True)
    (outside / "submission.yaml").write_text("contract: 1\n")
    secrets = {
        "read": [
            str(ROOT / "submissions" / "reference" / "submission.yaml"),
            str(ROOT / "submissions" / "chaff"),
            str(ROOT / "grader" / "rubric" / "rubric.yaml"),
            str(ROOT / "grader" / "hidden" / "sizing_sets.yaml"),
            str(ROOT / "grader" / "criteria" / "truth.py"),
            str(outside / "submission.yaml"),
            str(out),
        ],
        "write": [str(ROOT / "hostile-was-here"), str(outside / "hostile-was-here"), str(base / "hostile-was-here")],
    }
    submission, marker = make_submission(base / "subs", case.behaviour, part=case.part, args=case.args, secrets=secrets)
    secrets["write"].append(str(submission / "hostile-was-here"))
    tmpdir = base / "grader-tmp"
    before = Snapshot.take(tmpdir)
    if owner:
        _own(base, owner)  # as a pod's volumes belong to the pod's root

    graded = grade(submission, out, only=(ONLY[case.part],), tmpdir=tmpdir, wrap=lambda argv: command(row, argv))

    assert graded.exit_code == 0, f"grader grade exited {graded.exit_code}: {graded.stderr[-3000:]}"
    assert graded.report is not None
    kit = graded.report["extra_data"]["kit"]
    result = graded.criterion(ONLY[case.part])
    found = None
    if row in REFUSED:
        # Nothing ran: every sandboxed criterion says why in one line, and the script never reported.
        assert result["status"] == "inconclusive" and result["score"] == 0, result["output"]
        assert all(words in result["output"] for words in REFUSED[row]), result["output"]
        assert len(result["output"].splitlines()) == 1, result["output"]
        assert "FINDINGS" not in result.get("evidence", {}).get("logs", "")
        if not kit["sandboxed"]:  # where the grade records the refusal as its sandbox line, it opens the report
            assert graded.report["output"].startswith("NOT GRADED: cannot give the candidate"), graded.report["output"]
    else:
        line = kit["sandbox_note"]
        assert kit["sandboxed"] is True and not line.startswith(("UNSANDBOXED", "NOT ENFORCED")), line
        assert [words for words in ROW_LINES[row] if words not in line] == [], line
        assert graded.report["output"].splitlines()[0].startswith("Score "), "a warning opens the report"
        assert result["status"] == "failed" and result["score"] == 0, result["output"]
        if case.behaviour == "memory_hog" and result["output"].startswith("the command hung: stopped after"):
            # With the suite keeping both cores busy, writing 2 GiB can outlast the scenario's limit, and the
            # command is stopped there: contained, and its last lines say it never held more than the limit, or
            # show the allocation the row's rlimit refused (a process freeing 2 GiB on a busy machine exits late).
            held = [int(n) for n in re.findall(r"holding (\d+) MiB", result["output"])]
            refused = bool(case.reason_by_rlimit) and case.reason_by_rlimit in result["output"]
            assert (held and max(held) <= 2048) or refused, result["output"]
        elif case.reason_by_rlimit and "memory 2048 MiB by rlimit" in line:  # the allocation failed: see the stderr
            assert case.reason_by_rlimit in result.get("evidence", {}).get("logs", ""), result["output"]
        else:
            assert any(why in result["output"] for why in case.reason.split("|")), result["output"]
        if case.check is not None:
            found = findings(result)
            case.check(found)
    assert left_behind(before, marker=marker, grader_pid=graded.pid, tmpdir=tmpdir) == []
    for path in secrets["write"]:
        assert not Path(path).exists(), f"{path} was written"
    output: str = result["output"]
    return output + "\n" + result.get("evidence", {}).get("logs", ""), found
