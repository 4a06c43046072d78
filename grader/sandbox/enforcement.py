"""What holds each of a sandbox's limits, and the line every report carries to say so.

Each limit is held by one mechanism, named in the report as it is: `cgroup v1`, `cgroup v2`,
`rlimit` (per process, set by prlimit before the candidate's command starts), `the harness`
(output and wall clock, which it watches itself), or `none`. A limit held by none is also named at
the start of the line, after `NOT ENFORCED:`, so that reports open with it as they open with
UNSANDBOXED.

    enforcement = Enforcement(cgroups, run_as=65534, rlimits=True, isolated=True)
    enforcement.holders()     # {"processes": "cgroup v1", "memory": "rlimit", ...}
    enforcement.line(limits)  # "limits: processes 256 by cgroup v1, memory 2048 MiB by rlimit (...), ..."

Where cgroups cannot limit, rlimits stand in, and they are weaker: RLIMIT_NPROC counts every
process of the candidate's uid in its user namespace (hence only when the candidate has a uid of
its own, which the sandbox then leases for itself alone: uids.py), and RLIMIT_AS bounds each
process's address space, not the command's total.
"""

from __future__ import annotations

from dataclasses import dataclass

from .cgroups import SandboxCgroups
from .protocol import Limits

__all__ = ["NOT_ENFORCED", "Enforcement"]

NOT_ENFORCED = "NOT ENFORCED:"


@dataclass(frozen=True)
class Enforcement:
    """The facts that decide what holds each limit of one sandbox.

    cgroups: the sandbox's cgroups (version, the controllers that limit, why the others do not).
    run_as: the candidate's uid when it has one of its own (the grader is root), else None.
    rlimits: whether prlimit is installed to set the per-process limits.
    isolated: whether the sandbox is a bubblewrap namespace (its work folder a size-limited tmpfs).
    """

    cgroups: SandboxCgroups
    run_as: int | None
    rlimits: bool
    isolated: bool

    def _cgroup(self) -> str:
        return f"cgroup v{self.cgroups.version}"

    def _controlled(self, controller: str) -> bool:
        return self.cgroups.version is not None and controller in self.cgroups.controllers

    def holders(self) -> dict[str, str]:
        """Limit -> the mechanism holding it: "cgroup v1", "cgroup v2", "rlimit", "the harness", "none".

        "cleanup" is how every process a command started is ended when it ends.
        """
        rlimit = "rlimit" if self.rlimits else "none"
        processes = self._cgroup() if self._controlled("pids") else (rlimit if self.run_as is not None else "none")
        if self.cgroups.version is not None:
            cleanup = self._cgroup()
        elif self.run_as is not None and self.isolated:
            cleanup = "a sweep of the candidate's uid"
        else:
            cleanup = "none"
        return {
            "processes": processes,
            "memory": self._cgroup() if self._controlled("memory") else rlimit,
            "CPU": rlimit,
            "disk": "tmpfs" if self.isolated else rlimit,
            "open files": rlimit,
            "output": "the harness",
            "cleanup": cleanup,
        }

    def unenforced(self) -> list[str]:
        """The limits nothing holds, each with why."""
        why = {
            "processes": (
                "the grader is not root, so the candidate shares its uid and RLIMIT_NPROC would count "
                "the grader's own processes"
                if self.run_as is None and self.rlimits
                else "prlimit is not installed"
            ),
            "cleanup": "no cgroup and no uid of its own: a process that leaves the command's process group outlives it",
        }
        return [
            f"{name} ({why.get(name, 'prlimit is not installed')})"
            for name, holder in self.holders().items()
            if holder == "none"
        ]

    def line(self, limits: Limits) -> str:
        """The limits and what holds each, for the sandbox's note (one line)."""
        held = self.holders()
        uid = f"uid {self.run_as}" if self.run_as is not None else "the candidate's uid"
        detail = {
            ("processes", "rlimit"): f"rlimit (RLIMIT_NPROC: every process of {uid})",
            ("memory", "rlimit"): "rlimit (RLIMIT_AS: each process's address space)",
            ("CPU", "rlimit"): "rlimit (RLIMIT_CPU: each process)",
            ("disk", "tmpfs"): "a tmpfs of that size" + (" and rlimit (RLIMIT_FSIZE)" if self.rlimits else ""),
            ("disk", "rlimit"): "rlimit (RLIMIT_FSIZE: each file)",
            ("open files", "rlimit"): "rlimit (RLIMIT_NOFILE)",
        }
        amounts = {
            "processes": f"processes {limits.pids}",
            "memory": f"memory {limits.memory_bytes >> 20} MiB",
            "CPU": f"CPU {limits.cpu_s} s",
            "disk": f"disk {limits.disk_bytes >> 20} MiB",
            "open files": f"open files {limits.open_files}",
            "output": f"output {limits.output_bytes >> 20} MiB and wall clock",
        }
        parts = [f"{amounts[name]} by {detail.get((name, held[name]), held[name])}" for name in amounts]
        cleanup = held["cleanup"] + (" (cgroup.kill)" if held["cleanup"] == "cgroup v2" else "")
        text = f"limits: {', '.join(parts)}; every process a command started is killed at its end by {cleanup}"
        if self.cgroups.why:
            text += f"; cgroups: {self.cgroups.why}"
        return text
