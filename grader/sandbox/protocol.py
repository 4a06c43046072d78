"""What the outer grader and the harness inside the sandbox share: limits, results, the wire.

The two sides speak JSON lines: the outer process writes one request `{"op": NAME, "args": {...}}`
and reads one response, either `{"result": ...}` or `{"error": "one line"}`. The harness's
configuration travels in one environment variable (never on a command line, which any process
can read from /proc/PID/cmdline).
"""

from __future__ import annotations

import dataclasses
import json
import os
from dataclasses import dataclass, field
from typing import Any

__all__ = [
    "CONFIG_ENV",
    "FILE_BACK_BYTES",
    "TAIL_BYTES",
    "HarnessConfig",
    "Limits",
    "RunResult",
    "SandboxError",
    "SandboxRefused",
]

CONFIG_ENV = "GRADER_SANDBOX_CONFIG"
TAIL_BYTES = 64 * 1024  # the last bytes of each output stream kept for the report
FILE_BACK_BYTES = 4 * 1024 * 1024  # the most read back from one file named in files_back

GIB = 1024**3
MIB = 1024**2


class SandboxError(RuntimeError):
    """An operation in the sandbox failed; the message is the harness's one-line reason."""


class SandboxRefused(SandboxError):
    """The sandbox would not open here, and so ran nothing; the message says why and what to change."""


@dataclass(frozen=True)
class Limits:
    """Per-command limits for candidate code.

    cpu_s: CPU seconds per process (RLIMIT_CPU); a busy loop ends there even before the wall timeout.
    memory_bytes: memory of all the command's processes together (a memory cgroup; RLIMIT_AS per
        process where no memory controller can hold it).
    pids: processes and threads of the command together (a pids cgroup; RLIMIT_NPROC on the
        candidate's uid otherwise). grader.sandbox.enforcement says which holds each, and the
        sandbox's `note` says it in every report.
    output_bytes: stdout plus stderr; the command's process group is killed past it.
    disk_bytes: size of the writable tmpfs holding the work folder, HOME and TMPDIR (and RLIMIT_FSIZE).
    open_files: RLIMIT_NOFILE per process.
    """

    cpu_s: int = 120
    memory_bytes: int = 2 * GIB
    pids: int = 256
    output_bytes: int = 8 * MIB
    disk_bytes: int = 512 * MIB
    open_files: int = 1024

    def __post_init__(self) -> None:
        for f in dataclasses.fields(self):
            value = getattr(self, f.name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ValueError(f"Limits.{f.name} must be a positive whole number (got {value!r})")

    def to_dict(self) -> dict[str, int]:
        return dataclasses.asdict(self)


@dataclass
class RunResult:
    """How a candidate command ended and what it left.

    exit_code is None when the command was killed or ended by a signal (see `signal`, `killed`).
    killed says why the sandbox ended it: "wall timeout", "output cap", "memory limit",
    "cpu limit" or "stopped" (a spawned server stopped by the grader).
    limits_hit names every limit the command ran into, even those that did not end it ("pids").
    extended_s is how far past its timeout a watched command ran while its fake server still finished
    requests (grader.sandbox.jobs.Watch).
    files maps each path asked for in files_back to its text, or None when it is absent, not a
    regular file, or outside the work folder.
    """

    exit_code: int | None
    timed_out: bool
    killed: str | None
    stdout_tail: str
    stderr_tail: str
    stdout_bytes: int
    stderr_bytes: int
    wall_s: float
    files: dict[str, str | None] = field(default_factory=dict)
    signal: int | None = None
    limits_hit: list[str] = field(default_factory=list)
    extended_s: float = 0.0

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> RunResult:
        names = {f.name for f in dataclasses.fields(cls)}
        return cls(**{k: v for k, v in data.items() if k in names})

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)

    @property
    def ok(self) -> bool:
        return self.exit_code == 0 and self.killed is None


@dataclass
class HarnessConfig:
    """Where things are as the harness sees them, and how to run candidate commands.

    box_root: the writable area (a size-limited tmpfs in the sandbox, a temporary folder without
        one); the work folder, HOME, TMPDIR and injected files live under it.
    submission: the read-only source of the submission copied into the work folder at start.
    run_as: uid/gid for candidate commands (65534 when the harness is root), or None to run them
        as the harness's own user.
    sweep_uid: whether killing every process of `run_as` is safe (only in a private PID namespace).
    cgroups: controller name -> the sandbox's cgroup folder as the harness sees it ("unified" for v2).
    cgroup_controllers: which of "pids" and "memory" the cgroups limit; rlimits stand in for the others.
    """

    box_root: str
    submission: str
    python_bin: str
    stub_client: str | None  # the text of the kit's api_client.py, put on every command's PYTHONPATH
    limits: Limits
    run_as: int | None
    sweep_uid: bool
    cgroup_version: int | None = None
    cgroups: dict[str, str] = field(default_factory=dict)
    cgroup_controllers: list[str] = field(default_factory=list)
    isolated: bool = False

    def to_env(self) -> str:
        data = dataclasses.asdict(self)
        return json.dumps(data)

    @classmethod
    def from_env(cls) -> HarnessConfig:
        raw = os.environ.get(CONFIG_ENV)
        if not raw:
            raise SystemExit(f"{CONFIG_ENV} is not set: the harness is started by grader.sandbox.Sandbox")
        data = json.loads(raw)
        data["limits"] = Limits(**data["limits"])
        return cls(**data)
