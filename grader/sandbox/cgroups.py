"""Control groups: one folder per sandbox (made outside), one child per candidate command (made inside).

The outer process creates the sandbox's cgroup under its own (so no privileges beyond write access
to that folder are needed) and binds it into the sandbox at a root-only path. The harness makes a
child per command, moves the command's first process into it before it execs, and kills and
removes it when the command ends. A process cannot leave its cgroup without write access to
another one, so killing the cgroup kills a double-forked daemon too.

A cgroup does two jobs that need different things. Ending every process of a command needs only a
folder the grader can write (`cgroup.procs`, and `cgroup.kill` on v2). Limiting them needs the
pids and memory controllers in that folder: on v1 a mount per controller, on v2 the controllers
listed in the parent's `cgroup.controllers` and enabled in its `cgroup.subtree_control`. So a
v2 hierarchy without those controllers still ends every command's processes, and the limits fall
back to rlimits (see `SandboxCgroups.controllers`). Both hierarchies are supported: v1 (`pids.max`,
`memory.limit_in_bytes`) and v2 (`pids.max`, `memory.max`, `cgroup.kill`).
"""

from __future__ import annotations

import contextlib
import errno
import os
import signal
import time
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

__all__ = ["CONTROLLERS", "JobCgroup", "SandboxCgroups", "create_sandbox_cgroups", "remove_tree"]

CONTROLLERS = ("pids", "memory")
_ROOT = Path("/sys/fs/cgroup")


@dataclass(frozen=True)
class SandboxCgroups:
    """The sandbox's cgroup folders and what they can do.

    version: 1 or 2, or None when no cgroup could be made (then `why` says why).
    folders: controller name (v1) or "unified" (v2) -> the sandbox's folder.
    controllers: those of CONTROLLERS that limit each command (the others fall back to rlimits).
    why: why a controller, or every cgroup, is missing; empty when nothing is.
    """

    version: int | None = None
    folders: dict[str, Path] = field(default_factory=dict)
    controllers: tuple[str, ...] = ()
    why: str = ""


def _own_paths() -> dict[str, str]:
    """Controller (or "" for v2) -> this process's cgroup path, from /proc/self/cgroup."""
    out: dict[str, str] = {}
    for line in Path("/proc/self/cgroup").read_text().splitlines():
        _, controllers, path = line.split(":", 2)
        for name in controllers.split(",") if controllers else [""]:
            out[name] = path
    return out


def _mounts() -> list[tuple[str, str, str, set[str]]]:
    """(fstype, hierarchy root, mount point, super options) of every cgroup mount."""
    out = []
    for line in Path("/proc/self/mountinfo").read_text().splitlines():
        left, _, right = line.partition(" - ")
        fields, rfields = left.split(), right.split()
        if len(rfields) >= 3 and rfields[0] in ("cgroup", "cgroup2"):
            out.append((rfields[0], fields[3], fields[4], set(rfields[2].split(","))))
    return out


def _join(mount: str, root: str, path: str) -> Path:
    rel = path[len(root) :] if root != "/" and path.startswith(root) else path
    return Path(mount) / rel.lstrip("/")


def create_sandbox_cgroups(name: str) -> SandboxCgroups:
    """Make `name` under this process's cgroup: in each v1 controller's hierarchy, or in the v2 one
    when /sys/fs/cgroup is a cgroup2 mount. Never raises: what cannot be made is said in `why`."""
    try:
        own = _own_paths()
        mounts = _mounts()
    except OSError as exc:
        return SandboxCgroups(why=f"cannot read cgroup information ({exc.strerror})")
    if (_ROOT / "cgroup.controllers").exists():
        return _create_v2(name, own, mounts)
    return _create_v1(name, own, mounts)


def _create_v1(name: str, own: dict[str, str], mounts: list[tuple[str, str, str, set[str]]]) -> SandboxCgroups:
    made: dict[str, Path] = {}
    missing: list[str] = []
    for controller in CONTROLLERS:
        mount = next((m for m in mounts if m[0] == "cgroup" and controller in m[3]), None)
        if mount is None or controller not in own:
            missing.append(f"no cgroup v1 {controller} controller mounted")
            continue
        folder = _join(mount[2], mount[1], own[controller]) / name
        try:
            folder.mkdir()
        except OSError as exc:
            missing.append(f"cannot create {folder} ({exc.strerror})")
            continue
        made[controller] = folder
    if not made:
        return SandboxCgroups(why="; ".join(missing))
    return SandboxCgroups(1, made, tuple(made), "; ".join(missing))


def _create_v2(name: str, own: dict[str, str], mounts: list[tuple[str, str, str, set[str]]]) -> SandboxCgroups:
    mount = next((m for m in mounts if m[0] == "cgroup2" and Path(m[2]) == _ROOT), None) or next(
        (m for m in mounts if m[0] == "cgroup2"), None
    )
    if mount is None or "" not in own:
        return SandboxCgroups(why="no cgroup v2 mount for this process")
    parent = _join(mount[2], mount[1], own[""])
    folder = parent / name
    try:
        folder.mkdir()
    except OSError as exc:
        return SandboxCgroups(why=f"cannot create {folder} ({exc.strerror})")
    usable, why = _delegate(parent, folder)
    return SandboxCgroups(2, {"unified": folder}, usable, why)


def _delegate(parent: Path, folder: Path) -> tuple[tuple[str, ...], str]:
    """Enable the pids and memory controllers for the commands' cgroups under `folder`.

    A controller reaches `folder` only if `parent` offers it (its cgroup.controllers) and enables it
    for its children (its cgroup.subtree_control); v2 refuses the latter while `parent` itself holds
    processes (unless it is the root), which is where the grader usually runs. Returns the usable
    controllers and, for the others, why not.
    """
    try:
        offered = (parent / "cgroup.controllers").read_text().split()
    except OSError as exc:
        return (), f"cannot read {parent / 'cgroup.controllers'} ({exc.strerror})"
    absent = [c for c in CONTROLLERS if c not in offered]
    wanted = [c for c in CONTROLLERS if c in offered]
    problems = []
    if absent:
        problems.append(
            f"cgroup v2 has no {' or '.join(absent)} controller under {parent} "
            f"(it offers: {' '.join(offered) or 'none'})"
        )
    if wanted:
        try:
            enabled = (parent / "cgroup.subtree_control").read_text().split()
            if not all(c in enabled for c in wanted):
                (parent / "cgroup.subtree_control").write_text(" ".join(f"+{c}" for c in wanted))
            (folder / "cgroup.subtree_control").write_text(" ".join(f"+{c}" for c in wanted))
        except OSError as exc:
            reason = exc.strerror or str(exc)
            if exc.errno == errno.EBUSY:  # v2's rule: no controllers for the children of a cgroup with processes
                reason += (
                    f"; {parent} holds processes (run the grader in a cgroup of its own, e.g. systemd-run --scope)"
                )
            problems.append(f"cannot enable {' and '.join(wanted)} for {folder} ({reason})")
            wanted = []
    return tuple(wanted), "; ".join(problems)


def _kill_members(folder: Path, deadline: float) -> None:
    """SIGKILL every process in `folder` until it is empty (cgroup.kill when the kernel has it)."""
    kill_file = folder / "cgroup.kill"
    if kill_file.exists():
        with contextlib.suppress(OSError):
            kill_file.write_text("1")
    while time.monotonic() < deadline:
        try:
            pids = [int(p) for p in (folder / "cgroup.procs").read_text().split()]
        except OSError:
            return
        if not pids:
            return
        for pid in pids:
            with contextlib.suppress(OSError):
                os.kill(pid, signal.SIGKILL)
        time.sleep(0.01)


def remove_tree(folders: Iterable[str | Path], *, timeout_s: float = 10.0) -> list[str]:
    """Kill everything in each folder and its descendants, then remove them, deepest first.

    Returns what could not be removed (empty when all went), so the caller can say so.
    """
    deadline = time.monotonic() + timeout_s
    left: list[str] = []
    for given in list(folders):
        top = Path(given)
        if not top.is_dir():
            continue
        subs = sorted((p for p in top.rglob("*") if p.is_dir()), key=lambda p: len(p.parts), reverse=True)
        for folder in [*subs, top]:
            _kill_members(folder, deadline)
            while True:
                try:
                    folder.rmdir()
                    break
                except FileNotFoundError:
                    break
                except OSError:
                    if time.monotonic() > deadline:  # a process still exiting keeps it busy
                        left.append(str(folder))
                        break
                    time.sleep(0.02)
    return left


class JobCgroup:
    """One candidate command's cgroup (a child in each of the sandbox's folders).

    `controllers` are those that limit it (pids.max, the memory limit); without them the cgroup
    still holds every process the command starts, so that `remove` ends them all.
    """

    def __init__(
        self,
        version: int,
        roots: dict[str, str],
        name: str,
        *,
        pids: int,
        memory_bytes: int,
        controllers: Iterable[str] = CONTROLLERS,
    ) -> None:
        self.version = version
        self.controllers = tuple(controllers)
        self.folders = [Path(root) / name for root in roots.values()]
        made: list[Path] = []
        try:
            for folder in self.folders:
                folder.mkdir()
                made.append(folder)
            if "pids" in self.controllers:
                self._write("pids.max", str(pids))
            if "memory" in self.controllers and version == 1:
                self._write("memory.limit_in_bytes", str(memory_bytes))
                self._write("memory.memsw.limit_in_bytes", str(memory_bytes), optional=True)
            elif "memory" in self.controllers:
                self._write("memory.max", str(memory_bytes))
                self._write("memory.swap.max", "0", optional=True)
        except OSError:
            remove_tree(made)
            raise

    def _write(self, name: str, value: str, *, optional: bool = False) -> None:
        for folder in self.folders:
            path = folder / name
            if path.exists():
                path.write_text(value)
                return
        if not optional:
            raise OSError(f"no {name} in {', '.join(map(str, self.folders))}")

    def _read(self, name: str) -> str:
        for folder in self.folders:
            with contextlib.suppress(OSError):
                return (folder / name).read_text()
        return ""

    @property
    def procs_files(self) -> list[str]:
        """Files a process writes its pid to, to join this cgroup in every controller."""
        return [str(folder / "cgroup.procs") for folder in self.folders]

    def limits_hit(self) -> list[str]:
        hit = []
        if _counter(self._read("pids.events"), "max") > 0:
            hit.append("pids")
        if self.oom_killed():
            hit.append("memory")
        return hit

    def oom_killed(self) -> bool:
        if self.version == 1:
            return _counter(self._read("memory.oom_control"), "oom_kill") > 0
        return _counter(self._read("memory.events"), "oom_kill") > 0

    def remove(self) -> list[str]:
        return remove_tree(self.folders)


def _counter(text: str, key: str) -> int:
    for line in text.splitlines():
        parts = line.split()
        if len(parts) == 2 and parts[0] == key and parts[1].isdigit():
            return int(parts[1])
    return 0
