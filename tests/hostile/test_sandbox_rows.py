"""One Sandbox opened in each row of hosts.py (sandbox_probe.py): what it says it enforces is what its
commands meet, and nothing of them is left on the machine.

- cgroup-v1: pids and memory by cgroup v1; a command's processes end with its cgroup.
- cgroup-v2: the commands run in a cgroup of the cgroup2 mount; it has no pids or memory controller
  here, so rlimits hold them, and cgroup.kill ends every process of a command, even while another
  command runs (so it is not the sweep of the candidate's uid).
- cgroups-ro, userns-65536: rlimits only; escaped processes end with the sweep of the candidate's
  uid once no command runs, or with the sandbox.
- userns-root: the sandbox refuses in one line and runs nothing.

And the pod the Kubernetes Job describes (userns-65536, only the Job's capabilities, no_new_privs,
/proc masked as a runtime masks it) runs the same sandbox; without any one of those capabilities it
cannot (HOSTILE_FULL=1, one sandbox each).
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from hostile_grading import ROOT, processes_with, sandbox_cgroups
from hosts import command, unavailable

from grader.round.k8s_job import CAPABILITIES
from grader.sandbox.uids import FIRST, LAST

FULL = os.environ.get("HOSTILE_FULL") == "1"
PROBE = Path(__file__).resolve().parent / "sandbox_probe.py"
HOLDERS = {
    "cgroup-v1": {"processes": "cgroup v1", "memory": "cgroup v1", "cleanup": "cgroup v1"},
    "cgroup-v2": {"processes": "rlimit", "memory": "rlimit", "cleanup": "cgroup v2"},
    "cgroups-ro": {"processes": "rlimit", "memory": "rlimit", "cleanup": "a sweep of the candidate's uid"},
    "userns-65536": {"processes": "rlimit", "memory": "rlimit", "cleanup": "a sweep of the candidate's uid"},
}
POD = list(CAPABILITIES)


@pytest.fixture
def submission() -> Iterator[Path]:
    """A submission folder every row's root can read (pytest's own temporary folders are 0700 root)."""
    folder = Path(tempfile.mkdtemp(prefix="grader-probe-", dir="/tmp"))
    try:
        folder.chmod(0o755)
        (folder / "submission.yaml").write_text("contract: 1\n")
        yield folder
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def _probe(row: str, folder: Path, *, caps: list[str] | None = None, masked_proc: bool = False) -> dict[str, Any]:
    """Run sandbox_probe.py in `row`; check that nothing of it is left on the machine; return what it saw."""
    if why := unavailable(row):
        pytest.skip(f"{row}: {why}")
    marker = f"probe-{row}-{uuid.uuid4().hex[:8]}"
    argv = command(row, [sys.executable, str(PROBE), str(folder), marker], caps=caps, masked_proc=masked_proc)
    proc = subprocess.Popen(argv, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        out, err = proc.communicate(timeout=180)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    assert proc.returncode == 0, err[-3000:]
    assert processes_with(marker) == [], "a candidate process outlived its sandbox"
    assert sandbox_cgroups(proc.pid) == [], "a cgroup outlived its sandbox"
    seen: dict[str, Any] = json.loads(out.strip().splitlines()[-1])
    return seen


def _candidate_uid(seen: dict[str, Any]) -> bool:
    """The candidate ran as 65534, or as a uid of its own where RLIMIT_NPROC holds the process limit."""
    who = (seen.get("who") or [""])[0]
    if not who.isdigit():
        return False
    by_rlimit = seen.get("holders", {}).get("processes") == "rlimit"
    return FIRST <= int(who) <= LAST if by_rlimit else int(who) == 65534


def _confined(seen: dict[str, Any]) -> None:
    """What every row that runs candidate code must show."""
    assert "error" not in seen, seen.get("error")
    assert seen["isolated"] is True and not seen["note"].startswith(("UNSANDBOXED", "NOT ENFORCED")), seen["note"]
    assert _candidate_uid(seen), seen["who"]
    caps = dict(line.split(": ", 1) for line in seen["who"] if line.startswith(("Cap", "NoNewPrivs")))
    assert caps["CapPrm"] == caps["CapEff"] == caps["CapAmb"] == "0000000000000000" and caps["NoNewPrivs"] == "1", caps
    assert seen["wall_timeout"] == ["wall timeout", True]
    assert seen["files"] == "from the grader"
    forked, *error = seen["fork_loop"]
    assert int(forked) < 64 and " ".join(error) == "Resource temporarily unavailable", seen["fork_loop"]


@pytest.mark.slow
@pytest.mark.rotating(33)
@pytest.mark.parametrize("row", list(HOLDERS))
def test_each_row_enforces_what_its_line_says(row: str, submission: Path) -> None:
    seen = _probe(row, submission)
    _confined(seen)
    holders = seen["holders"]
    assert {k: holders[k] for k in HOLDERS[row]} == HOLDERS[row]
    assert "processes 64 by " + HOLDERS[row]["processes"] in seen["note"]
    assert "memory 256 MiB by " + HOLDERS[row]["memory"] in seen["note"]
    limits = {line.split(" ")[1]: line for line in seen["who"] if line.startswith("Max ")}
    if holders["processes"] == "rlimit":  # the rlimits are there exactly when the line says so
        assert limits["processes"].split()[2:4] == ["64", "64"], limits
        assert limits["address"].split()[3:5] == [str(256 * 1024**2)] * 2, limits
        assert seen["fork_loop_limits_hit"] == []
    else:
        assert limits["processes"].split()[2] != "64" and limits["address"].split()[3] == "unlimited", limits
        assert seen["fork_loop_limits_hit"] == ["pids"]
    cgroup_line = next((line for line in seen["who"] if line.startswith("0::")), "")
    if row == "cgroup-v2":  # the command ran in its own cgroup of the v2 hierarchy
        assert cgroup_line.startswith("0::/grader-sandbox-") and cgroup_line.endswith("/job-1"), seen["who"]
    if holders["cleanup"].startswith("cgroup"):
        # A sleeper was spawned and alive throughout: no sweep ran, the cgroup ended the loop's
        # setsid children and the daemon.
        assert seen["daemon"] == "daemon started" and seen["alive_after"] == 0, seen
    else:
        # The sweep waits for the spawned sleeper: the escaped children live on until then (and the
        # next command met the process limit they hold); _probe found none left after the sandbox.
        # On a busy machine they may still hold every process the limit allows when the count starts,
        # so that the count itself cannot start: that too says they are alive.
        alive = seen["alive_after"]
        held = isinstance(alive, str) and re.search(r"Resource temporarily unavailable|fork|can't start", alive)
        assert (isinstance(alive, int) and alive > 0) or held, seen


@pytest.mark.slow
@pytest.mark.rotating(5)
def test_where_only_root_is_mapped_the_sandbox_refuses_in_one_line(submission: Path) -> None:
    seen = _probe("userns-root", submission)
    assert set(seen) == {"error", "refused"} and seen["refused"], seen  # nothing ran: no note, no command
    assert "\n" not in seen["error"]
    assert "uid and gid 65534 are not mapped in this user namespace (it maps uids 0 and gids 0)" in seen["error"]
    assert "hostUsers: false" in seen["error"] and "--map-users=100000,0,65536" in seen["error"]


@pytest.mark.slow
@pytest.mark.rotating(7)
def test_the_pod_the_job_describes_runs_the_sandbox(submission: Path) -> None:
    """The Job's capabilities alone, no_new_privs, and /proc masked as a runtime masks it from inside
    the pod's user namespace (so bubblewrap, root there, still mounts its own /proc)."""
    seen = _probe("userns-65536", submission, caps=POD, masked_proc=True)
    _confined(seen)
    assert seen["holders"]["processes"] == "rlimit"


@pytest.mark.slow
@pytest.mark.skipif(not FULL, reason="a sandbox per capability: make hostile-full (HOSTILE_FULL=1)")
@pytest.mark.parametrize("dropped", POD)
def test_each_capability_the_job_keeps_is_needed(dropped: str, submission: Path) -> None:
    seen = _probe("userns-65536", submission, caps=[c for c in POD if c != dropped])
    broken: dict[str, Callable[[], bool]] = {
        "SYS_ADMIN": lambda: "Creating new namespace failed" in seen.get("error", ""),
        "NET_ADMIN": lambda: "loopback" in seen.get("error", ""),
        "SETUID": lambda: not _candidate_uid(seen),
        "SETGID": lambda: not _candidate_uid(seen),
        "CHOWN": lambda: "cannot prepare the work folder" in seen.get("error", ""),
        "DAC_OVERRIDE": lambda: "write_file" in seen.get("error", ""),
        "KILL": lambda: seen.get("wall_timeout") == ["wall timeout", False],
    }
    assert broken[dropped](), f"the sandbox did without {dropped}: {seen}"
