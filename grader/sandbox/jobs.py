"""Candidate commands inside the sandbox: start them confined, watch them, end every process.

A command starts through a short chain of trusted programs, each exec'ing the next so the pid
stays the same: `sh` moves itself into the command's cgroup (as root, before anything else runs),
`prlimit` sets the per-process rlimits (not preexec_fn: the harness has server threads), and
`setpriv` drops to the candidate's uid with no groups, no capabilities and no_new_privs. The
command runs in its own session and process group. One thread per command reads its output
(keeping a tail and a count), and kills its process group at the wall deadline or the output cap.
When it ends, everything it started is killed: its process group, its cgroup, and — when no other
candidate process should be alive — every process of the candidate's uid in the PID namespace.

A command may be watched (`Watch`): at its wall deadline it is given `quiet_s` more, again and again up
to `max_s` in all, while a fake server it talks to still finishes requests. A client slowed down by a busy
machine keeps its time; one that hangs (no request finished for `quiet_s`) is stopped at its deadline.
"""

from __future__ import annotations

import contextlib
import os
import selectors
import shutil
import signal
import stat
import subprocess
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .cgroups import JobCgroup
from .protocol import FILE_BACK_BYTES, TAIL_BYTES, HarnessConfig, RunResult

__all__ = ["CommandSpec", "Job", "JobContext", "Watch"]

_JOIN_CGROUPS = 'while [ "$#" -gt 0 ] && [ "$1" != -- ]; do echo "$$" > "$1" || exit 126; shift; done; shift; exec "$@"'
_LINGER_S = 0.3  # how long to keep reading after the command's first process has exited
_TERM_GRACE_S = 3.0
_CPU_HARD_EXTRA_S = 5  # SIGXCPU at the soft limit (so the cause is visible), SIGKILL this much later


@dataclass(frozen=True)
class Watch:
    """Extend a command's deadline while the fake server `server` finishes requests (module docstring)."""

    server: str
    quiet_s: float
    max_s: float

    @classmethod
    def from_args(cls, value: Any) -> Watch | None:
        if value is None:
            return None
        if not isinstance(value, dict) or set(value) != {"server", "quiet_s", "max_s"}:
            raise ValueError("watch must be an object with exactly server, quiet_s and max_s")
        server, quiet, most = value["server"], value["quiet_s"], value["max_s"]
        if not isinstance(server, str) or not server:
            raise ValueError("watch: server must name a fake server")
        for name, number in (("quiet_s", quiet), ("max_s", most)):
            if isinstance(number, bool) or not isinstance(number, (int, float)) or not 0 < number <= 24 * 3600:
                raise ValueError(f"watch: {name} must be a number of seconds above 0 (got {number!r})")
        return cls(server, float(quiet), float(most))


@dataclass
class CommandSpec:
    argv: list[str]
    cwd: str = "work"
    env: dict[str, str] = field(default_factory=dict)
    timeout_s: float = 60.0
    inject: dict[str, str] = field(default_factory=dict)
    files_back: list[str] = field(default_factory=list)
    watch: Watch | None = None

    @classmethod
    def from_args(cls, args: dict[str, Any], *, default_timeout: float) -> CommandSpec:
        argv = args.get("argv")
        if not isinstance(argv, list) or not argv or not all(isinstance(a, str) for a in argv):
            raise ValueError("argv must be a non-empty list of strings")
        env = args.get("env") or {}
        if not isinstance(env, dict) or not all(isinstance(k, str) and isinstance(v, str) for k, v in env.items()):
            raise ValueError("env must map strings to strings")
        inject = args.get("inject") or {}
        if not isinstance(inject, dict) or not all(isinstance(v, str) for v in inject.values()):
            raise ValueError("inject must map file names to text")
        for name in inject:
            if not isinstance(name, str) or not name or "/" in name or name in (".", ".."):
                raise ValueError(f"inject: {name!r} is not a plain file name")
        files_back = list(args.get("files_back") or [])
        for rel in files_back:
            _check_relative(rel, "files_back")
        timeout = args.get("timeout_s", default_timeout)
        if isinstance(timeout, bool) or not isinstance(timeout, (int, float)) or not 0 < timeout <= 24 * 3600:
            raise ValueError(f"timeout_s must be a number of seconds above 0 (got {timeout!r})")
        cwd = args.get("cwd") or "work"
        if not isinstance(cwd, str) or not (cwd == "work" or cwd.startswith("work/")):
            raise ValueError(f"cwd must be 'work' or a folder under it (got {cwd!r})")
        if cwd != "work":
            _check_relative(cwd[len("work/") :], "cwd")
        watch = Watch.from_args(args.get("watch"))
        if watch is not None and watch.max_s < float(timeout):
            raise ValueError(f"watch: max_s ({watch.max_s:g}) must be at least timeout_s ({float(timeout):g})")
        return cls(
            argv=argv,
            cwd=cwd,
            env=env,
            timeout_s=float(timeout),
            inject=inject,
            files_back=files_back,
            watch=watch,
        )


def _check_relative(rel: Any, what: str) -> None:
    if not isinstance(rel, str) or not rel or rel.startswith("/") or ".." in Path(rel).parts:
        raise ValueError(f"{what}: {rel!r} must be a path relative to the work folder, without '..'")


class JobContext:
    """What every job of one sandbox shares: the configuration, the tools, the live jobs."""

    def __init__(self, config: HarnessConfig) -> None:
        self.config = config
        self.root = Path(config.box_root)
        self.work = self.root / "work"
        self.tools = {
            name: shutil.which(name, path="/usr/bin:/bin:/usr/sbin:/sbin") for name in ("sh", "prlimit", "setpriv")
        }
        self.live: dict[str, Job] = {}
        self.counter = 0
        self.lock = threading.Lock()

    def next_name(self) -> str:
        with self.lock:
            self.counter += 1
            return f"job-{self.counter}"

    def launcher(self, cgroup: JobCgroup | None) -> list[str]:
        """The trusted prefix of a candidate command (see the module docstring)."""
        limits, cfg = self.config.limits, self.config
        prefix: list[str] = []
        if cgroup is not None:
            prefix += [self._tool("sh"), "-c", _JOIN_CGROUPS, "sandbox-join", *cgroup.procs_files, "--"]
        if self.tools["prlimit"]:
            prefix += [
                self._tool("prlimit"),
                f"--cpu={limits.cpu_s}:{limits.cpu_s + _CPU_HARD_EXTRA_S}",
                f"--fsize={limits.disk_bytes}",
                f"--nofile={limits.open_files}",
                "--core=0",
            ]
            held = cgroup.controllers if cgroup is not None else ()
            # Weaker stand-ins where no controller holds the limit: the address space of each process,
            # and NPROC, which counts every process of the uid (so only for the candidate's own uid).
            if "memory" not in held:
                prefix += [f"--as={limits.memory_bytes}"]
            if "pids" not in held and cfg.run_as is not None:
                prefix += [f"--nproc={limits.pids}"]
            prefix.append("--")
        if cfg.run_as is not None:
            prefix += [
                self._tool("setpriv"),
                f"--reuid={cfg.run_as}",
                f"--regid={cfg.run_as}",
                "--clear-groups",
                "--no-new-privs",
                "--inh-caps=-all",
                "--bounding-set=-all",
                "--",
            ]
        return prefix

    def _tool(self, name: str) -> str:
        path = self.tools[name]
        if path is None:
            raise RuntimeError(f"{name} is not installed in the sandbox")
        return path

    def sweep(self) -> None:
        """Kill every process of the candidate's uid (only in a private PID namespace).

        A helper that is that uid calls kill(-1, SIGKILL), which reaches exactly the processes
        that uid may signal and never the harness; repeated until /proc shows none alive.
        """
        uid = self.config.run_as
        if uid is None or not self.config.sweep_uid:
            return
        deadline = time.monotonic() + 10
        while _live_pids_of(uid) and time.monotonic() < deadline:
            subprocess.run(
                [
                    self._tool("setpriv"),
                    f"--reuid={uid}",
                    f"--regid={uid}",
                    "--clear-groups",
                    "--",
                    self._tool("sh"),
                    "-c",
                    "kill -KILL -1",
                ],
                stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
                check=False,
            )
            time.sleep(0.01)


def _live_pids_of(uid: int) -> list[int]:
    """Processes of `uid` that are not zombies."""
    out = []
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit():
            continue
        try:
            status = Path(entry.path, "status").read_text()
        except OSError:
            continue
        fields = dict(line.split(":", 1) for line in status.splitlines() if ":" in line)
        real_uid = int(fields.get("Uid", "-1 ").split()[0])
        if real_uid == uid and not fields.get("State", "").strip().startswith(("Z", "X")):
            out.append(int(entry.name))
    return out


class Job:
    """One candidate command, from start to the moment nothing of it is left."""

    def __init__(self, ctx: JobContext, spec: CommandSpec, progress: Callable[[str], int] | None = None) -> None:
        self.ctx = ctx
        self.spec = spec
        # how many requests a named fake server has finished: what a watched command's deadline follows
        self.progress = progress
        self.extended_s = 0.0  # how far past its timeout a watched command was let run
        self.name = ctx.next_name()
        self.cgroup: JobCgroup | None = None
        self.tails = {"stdout": bytearray(), "stderr": bytearray()}
        self.counts = {"stdout": 0, "stderr": 0}
        self.killed: str | None = None
        self.started = 0.0
        self.ended: float | None = None
        self.proc: subprocess.Popen[bytes] | None = None
        self.thread = threading.Thread(target=self._pump, name=f"sandbox-{self.name}", daemon=True)

    def start(self) -> None:
        cfg = self.ctx.config
        cwd = self.ctx.work if self.spec.cwd == "work" else self.ctx.work / self.spec.cwd[len("work/") :]
        if not cwd.is_dir():
            raise ValueError(f"cwd {self.spec.cwd!r} is not a folder of the work folder")
        env = self._environment()
        if cfg.cgroup_version is not None:
            self.cgroup = JobCgroup(
                cfg.cgroup_version,
                cfg.cgroups,
                self.name,
                pids=cfg.limits.pids,
                memory_bytes=cfg.limits.memory_bytes,
                controllers=cfg.cgroup_controllers,
            )
        try:
            argv = [*self.ctx.launcher(self.cgroup), *self.spec.argv]
            self.started = time.monotonic()
            self.proc = subprocess.Popen(
                argv,
                cwd=cwd,
                env=env,
                stdin=subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                start_new_session=True,
                close_fds=True,
            )
        except BaseException:
            if self.cgroup is not None:
                self.cgroup.remove()
            raise
        self.ctx.live[self.name] = self
        self.thread.start()

    def _environment(self) -> dict[str, str]:
        cfg = self.ctx.config
        path = os.pathsep.join(p for p in [cfg.python_bin, "/usr/local/bin", "/usr/bin", "/bin"] if p)
        env = {
            "PATH": path,
            "HOME": str(self.ctx.root / "home"),
            "TMPDIR": str(self.ctx.root / "tmp"),
            "LANG": "C.UTF-8",
        }
        python_path = []
        if self.spec.inject:
            folder = self.ctx.root / "inject" / self.name
            folder.mkdir(parents=True, mode=0o755)
            for name, text in self.spec.inject.items():
                (folder / name).write_text(text, encoding="utf-8")
                (folder / name).chmod(0o644)
            python_path.append(str(folder))
        if cfg.stub_client is not None:
            # Only the stub client, not the starter folder: its skeleton packages (loadgen/,
            # gateway/) would merge into a submission's namespace packages of the same names. A copy,
            # not a link: in an installed kit the original sits inside the package the sandbox hides.
            folder = self.ctx.root / "stub-client"
            if not folder.exists():
                folder.mkdir(mode=0o755)
                (folder / "api_client.py").write_text(cfg.stub_client, encoding="utf-8")
                (folder / "api_client.py").chmod(0o644)
            python_path.append(str(folder))
        given = dict(self.spec.env)
        if given.get("PYTHONPATH"):
            python_path.append(given.pop("PYTHONPATH"))
        if python_path:
            env["PYTHONPATH"] = os.pathsep.join(python_path)
        env.update(given)
        return env

    def _pump(self) -> None:
        """Read both streams until the command has ended; enforce the deadline and the output cap."""
        assert self.proc is not None and self.proc.stdout is not None and self.proc.stderr is not None
        limits = self.ctx.config.limits
        deadline = self.started + self.spec.timeout_s
        finished = self._finished()
        sel = selectors.DefaultSelector()
        sel.register(self.proc.stdout, selectors.EVENT_READ, "stdout")
        sel.register(self.proc.stderr, selectors.EVENT_READ, "stderr")
        exited_at: float | None = None
        while sel.get_map():
            for key, _ in sel.select(timeout=0.05):
                data = os.read(key.fd, 65536)
                if not data:
                    sel.unregister(key.fileobj)
                    continue
                self._keep(key.data, data)
            now = time.monotonic()
            if self.killed is None and self.counts["stdout"] + self.counts["stderr"] > limits.output_bytes:
                self.kill_group("output cap")
            if self.killed is None and now > deadline:
                later, finished = self._extended(now, finished)
                if later is None:
                    self.kill_group("wall timeout")
                else:
                    deadline = later
            if exited_at is None and self.proc.poll() is not None:
                exited_at = now
                self.ended = now
            if exited_at is not None and now - exited_at > _LINGER_S:
                break  # something it started still holds a pipe; the cleanup ends it
        sel.close()

    def _finished(self) -> int:
        """The requests the watched server has finished so far (0 for a command not watched)."""
        watch = self.spec.watch
        if watch is None or self.progress is None:
            return 0
        try:
            return self.progress(watch.server)
        except (ValueError, RuntimeError):  # the server is gone: nothing more will finish
            return -1

    def _extended(self, now: float, finished: int) -> tuple[float | None, int]:
        """A new deadline, `quiet_s` from `now`, when the watched server finished a request since the last look
        and `max_s` from the start has not passed (None: stop it now); and the count seen."""
        watch = self.spec.watch
        if watch is None or now >= self.started + watch.max_s:
            return None, finished
        seen = self._finished()
        if seen <= finished or seen < 0:
            return None, finished
        deadline = min(now + watch.quiet_s, self.started + watch.max_s)
        self.extended_s = max(self.extended_s, deadline - self.started - self.spec.timeout_s)
        return deadline, seen

    def _keep(self, stream: str, data: bytes) -> None:
        self.counts[stream] += len(data)
        tail = self.tails[stream]
        tail += data
        if len(tail) > TAIL_BYTES:
            del tail[:-TAIL_BYTES]

    def gone(self) -> bool:
        """The command has exited and nothing of its process group is left."""
        if self.proc is None or self.proc.poll() is None:
            return False
        try:
            os.killpg(self.proc.pid, 0)
        except ProcessLookupError:
            return True
        except OSError:
            return False
        return False

    def kill_group(self, why: str, sig: int = signal.SIGKILL) -> None:
        if self.killed is None:
            self.killed = why
        assert self.proc is not None
        with contextlib.suppress(OSError):
            os.killpg(self.proc.pid, sig)

    def wait(self) -> RunResult:
        """Wait for the command to end (the pump enforces its deadline), then clean up."""
        self.thread.join()
        return self.finish()

    def stop(self) -> RunResult:
        """End a spawned command: SIGTERM to its group, SIGKILL after a grace period."""
        assert self.proc is not None
        if self.proc.poll() is None:
            self.kill_group("stopped", signal.SIGTERM)
            with contextlib.suppress(subprocess.TimeoutExpired):
                self.proc.wait(_TERM_GRACE_S)
            self.kill_group("stopped")
        self.thread.join()
        return self.finish()

    def finish(self) -> RunResult:
        assert self.proc is not None
        with contextlib.suppress(OSError):
            os.killpg(self.proc.pid, signal.SIGKILL)
        limits_hit: list[str] = []
        if self.cgroup is not None:
            limits_hit = self.cgroup.limits_hit()
            self.cgroup.remove()
        self.ctx.live.pop(self.name, None)
        if not self.ctx.live:
            self.ctx.sweep()
        returncode = self.proc.wait()
        wall = (self.ended or time.monotonic()) - self.started
        self._drain()
        killed = self.killed
        sig = -returncode if returncode < 0 else None
        if killed is None and "memory" in limits_hit:
            killed = "memory limit"
        if sig == signal.SIGXCPU:
            limits_hit.append("cpu")
            killed = killed or "cpu limit"
        files = {rel: self._read_back(rel) for rel in self.spec.files_back}
        return RunResult(
            exit_code=returncode if returncode >= 0 and killed is None else None,
            timed_out=self.killed == "wall timeout",
            killed=killed,
            stdout_tail=self.tails["stdout"].decode("utf-8", "replace"),
            stderr_tail=self.tails["stderr"].decode("utf-8", "replace"),
            stdout_bytes=self.counts["stdout"],
            stderr_bytes=self.counts["stderr"],
            wall_s=round(wall, 3),
            extended_s=round(self.extended_s, 3),
            files=files,
            signal=sig,
            limits_hit=limits_hit,
        )

    def _drain(self) -> None:
        """Read what is left in the pipes now that every writer is dead (bounded by the tail)."""
        assert self.proc is not None
        for stream, pipe in (("stdout", self.proc.stdout), ("stderr", self.proc.stderr)):
            if pipe is None:
                continue
            os.set_blocking(pipe.fileno(), False)
            with contextlib.suppress(OSError):
                for _ in range(1024):
                    data = os.read(pipe.fileno(), 65536)
                    if not data:
                        break
                    self._keep(stream, data)
            pipe.close()

    def _read_back(self, rel: str) -> str | None:
        """A file the command left in the work folder; None unless it is a regular file inside it."""
        work = os.path.realpath(self.ctx.work)
        real = os.path.realpath(os.path.join(work, rel))
        if not real.startswith(work + os.sep):
            return None
        try:
            fd = os.open(real, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
        except OSError:
            return None
        with os.fdopen(fd, "rb") as fh:
            if not stat.S_ISREG(os.fstat(fd).st_mode):
                return None
            return fh.read(FILE_BACK_BYTES).decode("utf-8", "replace")
