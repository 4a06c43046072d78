"""Control groups: one folder per sandbox (made outside), one child per candidate command (made inside).

The outer process creates the sandbox's cgroup under its own (so no privileges beyond write access
to that folder are needed) and binds it into the sandbox at a root-only path. The harness makes a
child per command with the command's pids and memory limits, moves the command's first process
into it before it execs, and kills and removes it when the command ends. A process cannot leave
its cgroup without write access to another one, so killing the cgroup kills a double-forked
daemon too. Both hierarchies are supported: v1 (one mount per controller, `pids.max`,
`memory.limit_in_bytes`) and v2 (one unified mount, `pids.max`, `memory.max`, `cgroup.kill`).
"""

from __future__ import annotations

import contextlib
import os
import signal
import time
from pathlib import Path

__all__ = ["CONTROLLERS", "JobCgroup", "create_sandbox_cgroups", "remove_tree"]

CONTROLLERS = ("pids", "memory")
_ROOT = Path("/sys/fs/cgroup")


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
    rel = path[len(root):] if root != "/" and path.startswith(root) else path
    return Path(mount) / rel.lstrip("/")


def create_sandbox_cgroups(name: str) -> tuple[int | None, dict[str, Path], str]:
    """Make `name` under this process's cgroup for each controller.

    Returns (version, {controller or "unified": folder}, why-not); version is None when cgroups
    cannot be used here, with the reason.
    """
    try:
        own = _own_paths()
        mounts = _mounts()
    except OSError as exc:
        return None, {}, f"cannot read cgroup information ({exc.strerror})"
    if (_ROOT / "cgroup.controllers").exists():
        return _create_v2(name, own, mounts)
    made: dict[str, Path] = {}
    for controller in CONTROLLERS:
        mount = next((m for m in mounts if m[0] == "cgroup" and controller in m[3]), None)
        if mount is None or controller not in own:
            remove_tree(made.values())
            return None, {}, f"no cgroup v1 {controller} controller mounted"
        folder = _join(mount[2], mount[1], own[controller]) / name
        try:
            folder.mkdir()
        except OSError as exc:
            remove_tree(made.values())
            return None, {}, f"cannot create {folder} ({exc.strerror})"
        made[controller] = folder
    return 1, made, ""


def _create_v2(name: str, own: dict[str, str], mounts: list[tuple[str, str, str, set[str]]]) -> tuple[int | None, dict[str, Path], str]:
    mount = next((m for m in mounts if m[0] == "cgroup2"), None)
    if mount is None or "" not in own:
        return None, {}, "no cgroup v2 mount for this process"
    parent = _join(mount[2], mount[1], own[""])
    wanted = " ".join(f"+{c}" for c in CONTROLLERS)
    try:
        available = (parent / "cgroup.controllers").read_text().split()
        missing = [c for c in CONTROLLERS if c not in available]
        if missing:
            return None, {}, f"{parent}: controllers {', '.join(missing)} are not delegated here"
        enabled = (parent / "cgroup.subtree_control").read_text().split()
        if not all(c in enabled for c in CONTROLLERS):
            (parent / "cgroup.subtree_control").write_text(wanted)
        folder = parent / name
        folder.mkdir()
    except OSError as exc:
        return None, {}, f"cannot set up a cgroup under {parent} ({exc.strerror})"
    try:
        (folder / "cgroup.subtree_control").write_text(wanted)
    except OSError as exc:
        remove_tree([folder])
        return None, {}, f"cannot enable {wanted} in {folder} ({exc.strerror})"
    return 2, {"unified": folder}, ""


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


def remove_tree(folders: object, *, timeout_s: float = 10.0) -> list[str]:
    """Kill everything in each folder and its descendants, then remove them, deepest first.

    Returns what could not be removed (empty when all went), so the caller can say so.
    """
    deadline = time.monotonic() + timeout_s
    left: list[str] = []
    for top in list(folders):  # type: ignore[call-overload]
        top = Path(top)
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
    """One candidate command's cgroup (a child in each controller's sandbox folder)."""

    def __init__(self, version: int, roots: dict[str, str], name: str, *, pids: int, memory_bytes: int) -> None:
        self.version = version
        self.folders = [Path(root) / name for root in roots.values()]
        made: list[Path] = []
        try:
            for folder in self.folders:
                folder.mkdir()
                made.append(folder)
            self._write("pids.max", str(pids))
            if version == 1:
                self._write("memory.limit_in_bytes", str(memory_bytes))
                self._write("memory.memsw.limit_in_bytes", str(memory_bytes), optional=True)
            else:
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
