"""Grading a hostile submission end to end, and finding anything it left behind on the machine.

A hostile submission is a folder made here from one script in `behaviours/`: its submission.yaml
runs the script as the part under test (`loadgen` or `gateway`) with a unique marker in its
argv, so every process it starts (forks keep their argv) can be found in the process table
without mistaking another test's processes for it. `grader grade` runs as a real subprocess with
its own TMPDIR, so its temporary folders can be counted too.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
BEHAVIOURS = Path(__file__).resolve().parent / "behaviours"
GRADER = [sys.executable, "-m", "grader.cli"]
_HARMLESS = ["python", "-c", "pass"]


def make_submission(
    parent: Path, behaviour: str, *, part: str, args: tuple[str, ...] = (), secrets: dict[str, list[str]] | None = None
) -> tuple[Path, str]:
    """A submission folder whose `part` command runs behaviours/<behaviour>.py; returns it and its marker."""
    marker = f"hostile-{behaviour}-{uuid.uuid4().hex[:10]}"
    folder = parent / marker
    folder.mkdir(parents=True)
    shutil.copy(BEHAVIOURS / f"{behaviour}.py", folder / "hostile.py")
    command = ["python", "hostile.py", *args, "--marker", marker]
    data: dict[str, Any] = {
        "contract": 1,
        "candidate": f"hostile {behaviour}",
        "loadgen": {
            "command": command if part == "loadgen" else _HARMLESS,
            "test_command": _HARMLESS,
            "percentile": "hostile:percentile",
        },
        "gateway": {"command": command if part == "gateway" else _HARMLESS},
        "manifests": {"values": "values.yaml"},
        "sizing": {"command": _HARMLESS},
        "memo": "MEMO.md",
    }
    (folder / "submission.yaml").write_text(json.dumps(data, indent=2) + "\n")
    (folder / "values.yaml").write_text("{}\n")
    (folder / "MEMO.md").write_text("# Memo\n")
    (folder / "secrets.json").write_text(json.dumps(secrets or {"read": [], "write": []}))
    return folder, marker


@dataclass
class Graded:
    exit_code: int
    stdout: str
    stderr: str
    report: dict[str, Any] | None
    wall_s: float
    pid: int

    def criterion(self, cid: str) -> dict[str, Any]:
        assert self.report is not None, f"no report.json; grader said: {self.stderr[-2000:]}"
        return next(c for c in self.report["extra_data"]["kit"]["criteria"] if c["id"] == cid)


def grade(
    submission: Path,
    out: Path,
    *,
    only: tuple[str, ...],
    tmpdir: Path,
    timeout_s: float = 600,
    wrap: Callable[[list[str]], list[str]] | None = None,
    seed: int = 0,
) -> Graded:
    """`grader grade SUBMISSION --out OUT --seed SEED --only ...` as a subprocess with its own TMPDIR.

    The seed is given, as a test must: left out, a grade draws its own, and with it other unseen variants.
    `wrap` turns the command into one that runs it elsewhere (a row of hosts.py), keeping its pid.
    """
    tmpdir.mkdir(parents=True, exist_ok=True)
    argv = [*GRADER, "grade", str(submission), "--out", str(out), "--seed", str(seed)]
    for item in only:
        argv += ["--only", item]
    if wrap is not None:
        argv = wrap(argv)
    env = {**os.environ, "TMPDIR": str(tmpdir)}
    started = time.monotonic()
    proc = subprocess.Popen(argv, cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        stdout, stderr = proc.communicate(timeout=timeout_s)
    except subprocess.TimeoutExpired:
        proc.kill()
        stdout, stderr = proc.communicate()
        raise AssertionError(f"grader grade took over {timeout_s:g} s: {stdout[-2000:]}") from None
    report_path = out / "report.json"
    report = json.loads(report_path.read_text()) if report_path.is_file() else None
    return Graded(proc.returncode, stdout, stderr, report, time.monotonic() - started, proc.pid)


def findings(criterion: dict[str, Any]) -> dict[str, Any]:
    """What the hostile script saw from inside (its `FINDINGS {json}` line, in the report's logs)."""
    logs = criterion.get("evidence", {}).get("logs", "")
    match = re.search(r"^FINDINGS (\{.*\})$", logs, re.MULTILINE)
    assert match, f"the script reported nothing; logs: {logs[-1500:]}"
    found: dict[str, Any] = json.loads(match.group(1))
    return found


# -- what is left behind -----------------------------------------------------------------------


def _cmdline(pid: str) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode("utf-8", "replace")
    except OSError:
        return ""


def _state(pid: str) -> str:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return "X"


def processes_with(marker: str) -> list[str]:
    """Live (not zombie) processes whose command line names the marker: the script, its forks,
    and the sandbox (bubblewrap's command line holds the submission's path)."""
    return [
        f"{pid}: {_cmdline(pid)[:200]}"
        for pid in os.listdir("/proc")
        if pid.isdigit() and marker in _cmdline(pid) and _state(pid) not in ("Z", "X")
    ]


def listening_sockets() -> dict[str, int]:
    """Socket inode -> port of every TCP socket listening in this network namespace."""
    out = {}
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        try:
            lines = Path(table).read_text().splitlines()[1:]
        except OSError:
            continue
        for line in lines:
            fields = line.split()
            if fields[3] == "0A":
                out[fields[9]] = int(fields[1].rsplit(":", 1)[1], 16)
    return out


def _socket_owners(inodes: set[str]) -> dict[str, list[str]]:
    owners: dict[str, list[str]] = {}
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            fds = os.listdir(f"/proc/{pid}/fd")
        except OSError:
            continue
        for fd in fds:
            try:
                target = os.readlink(f"/proc/{pid}/fd/{fd}")
            except OSError:
                continue
            if target.startswith("socket:[") and target[8:-1] in inodes:
                owners.setdefault(target[8:-1], []).append(pid)
    return owners


def sandbox_cgroups(grader_pid: int | None = None) -> list[str]:
    """cgroup folders the sandbox made (named grader-sandbox-<grader pid>-<n>), on every hierarchy."""
    pattern = f"grader-sandbox-{grader_pid}-" if grader_pid is not None else "grader-sandbox-"
    found = []
    for top in Path("/sys/fs/cgroup").iterdir():
        if not top.is_dir():
            continue
        for dirpath, dirnames, _ in os.walk(top):
            for name in dirnames:
                if name.startswith(pattern):
                    found.append(os.path.join(dirpath, name))
            dirnames[:] = [d for d in dirnames if not d.startswith("grader-sandbox-")]
    return found


@dataclass
class Snapshot:
    listening: dict[str, int] = field(default_factory=dict)
    tmp_entries: set[str] = field(default_factory=set)

    @classmethod
    def take(cls, tmpdir: Path) -> Snapshot:
        tmpdir.mkdir(parents=True, exist_ok=True)
        return cls(listening_sockets(), {p.name for p in tmpdir.iterdir()})


def left_behind(before: Snapshot, *, marker: str, grader_pid: int, tmpdir: Path, wait_s: float = 10.0) -> list[str]:
    """Everything the grade left that was not there before: processes, listening sockets owned by
    them, cgroups, temporary folders. Empty when nothing is left."""
    problems = []
    deadline = time.monotonic() + wait_s  # the namespace's init may take a moment to be reaped
    while (alive := processes_with(marker)) and time.monotonic() < deadline:
        time.sleep(0.2)
    problems += [f"process left: {p}" for p in alive]
    new = {inode: port for inode, port in listening_sockets().items() if inode not in before.listening}
    owners = _socket_owners(set(new))
    for inode, pids in owners.items():
        mine = [p for p in pids if marker in _cmdline(p)]
        if mine:
            problems.append(f"port {new[inode]} still listening, held by {mine}")
    problems += [f"cgroup left: {c}" for c in sandbox_cgroups(grader_pid)]
    after = {p.name for p in tmpdir.iterdir()} if tmpdir.is_dir() else set()
    problems += [f"temporary file left: {tmpdir / name}" for name in sorted(after - before.tmp_entries)]
    return problems
