"""A uid of its own for a sandbox whose process limit is held by RLIMIT_NPROC.

RLIMIT_NPROC counts every process of a uid on the machine, not of one sandbox. Where no pids
cgroup can be made (a read-only cgroupfs, a v2 tree without the controller delegated), sandboxes
graded side by side that all run their candidate as 65534 share one budget of processes: one
candidate's threads can make another's fork fail, and that candidate loses points for it. So
such a sandbox leases a uid of its own for its lifetime, from 65000-65533 (a range Debian
reserves and leaves unallocated), one that this user namespace maps and no process runs as.

The lease is an exclusive lock on a file named after the uid, held until `release` (or until the
grader's process ends: the kernel drops the lock), so that graders in separate processes on one
machine never lease the same uid. The files live in one folder per user namespace (a uid is only
the same process owner within one), whatever a grader's TMPDIR: /run/lock/grader-uids-NS (a tmpfs
emptied at boot), else /dev/shm, else /tmp. Where no lease can be taken, the sandbox keeps 65534.
"""

from __future__ import annotations

import fcntl
import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

__all__ = ["FIRST", "LAST", "UidLease", "lease"]

FIRST, LAST = 65000, 65533
_HOMES = ("/run/lock", "/dev/shm", "/tmp")


def _locks() -> Path:
    """This user namespace's folder of lease files, in the first of _HOMES that is a writable folder."""
    home = next((h for h in _HOMES if os.path.isdir(h) and os.access(h, os.W_OK)), "/tmp")
    try:
        namespace = str(os.stat("/proc/self/ns/user").st_ino)
    except OSError:
        namespace = "host"
    return Path(home) / f"grader-uids-{namespace}"


@dataclass
class UidLease:
    uid: int
    fd: int

    def release(self) -> None:
        if self.fd >= 0:
            os.close(self.fd)  # closing the file drops the lock
            self.fd = -1


def _running_uids() -> set[int]:
    """The real uids of every process this PID namespace shows."""
    uids: set[int] = set()
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            for line in (entry / "status").read_text().splitlines():
                if line.startswith("Uid:"):
                    uids.add(int(line.split()[1]))
                    break
        except (OSError, ValueError, IndexError):
            continue  # the process ended while it was read
    return uids


def lease(unmapped: Callable[[int], str], locks: Path | None = None) -> UidLease | None:
    """A uid of 65000-65533 that `unmapped` accepts, that no process runs as and that no other sandbox
    holds; None when every one is taken."""
    folder = locks or _locks()
    try:
        folder.mkdir(mode=0o700, exist_ok=True)
    except OSError:
        return None
    busy = _running_uids()
    for uid in range(FIRST, LAST + 1):
        if uid in busy or unmapped(uid):
            continue
        try:
            fd = os.open(folder / str(uid), os.O_RDONLY | os.O_CREAT, 0o600)
        except OSError:
            return None  # the folder is not this grader's to use
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            continue
        return UidLease(uid, fd)
    return None
