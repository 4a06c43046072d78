"""The outer side: `Sandbox` starts the harness in bubblewrap, keeps the pipe to it, and ends it all.

One sandbox per grading session. Its namespace has only a loopback interface, its own PIDs and
IPC, a read-only allowlist of the filesystem and a size-limited tmpfs holding a copy of the
submission. Closing it kills the namespace (bubblewrap runs with --die-with-parent and is killed;
the kernel then kills every process of the PID namespace), removes its cgroups and leaves nothing
behind. Where namespaces are unavailable, the same harness runs as a plain child process and the
sandbox says "UNSANDBOXED: <why>" in `note` — never silently.

Cgroups: the sandbox's cgroup is made under this process's own (per controller on v1), bound into
the sandbox at a root-only path, and the harness makes one child per candidate command in it.
Where no cgroup can be made, or it has no pids or memory controller, rlimits stand in; `note`
says what holds each limit (grader.sandbox.enforcement) and opens with NOT ENFORCED when nothing
holds one.

The candidate gets uid 65534 when the grader is root. In a user namespace that does not map it
(only root mapped), the sandbox refuses to open, in one line saying what to map (userns.py).
Where RLIMIT_NPROC, which counts a uid's processes machine-wide, holds the process limit, the
sandbox leases a uid of its own instead (uids.py), so that sandboxes side by side do not share it.

bubblewrap's outer process exits as soon as its init reports the harness's exit status, without
waiting for it, so that init ends as a zombie of the host's init, which reaps it (here within
seconds); no live process remains.

bubblewrap's --die-with-parent ties the sandbox to the thread that opened it (the kernel's parent
death signal follows the creating thread): open and close a Sandbox on a thread that outlives it.
"""

from __future__ import annotations

import collections
import contextlib
import itertools
import json
import os
import queue
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from functools import lru_cache
from pathlib import Path
from types import TracebackType
from typing import IO, Any, NamedTuple, Self

from . import cgroups as cg
from . import layout, uids, userns
from .enforcement import NOT_ENFORCED, Enforcement
from .operations import HarnessOperations
from .protocol import CONFIG_ENV, HarnessConfig, Limits, SandboxError, SandboxRefused

__all__ = ["Sandbox", "isolation_available"]

CANDIDATE_UID = 65534  # nobody/nogroup: owns nothing on the host
_START_TIMEOUT_S = 60.0
_EXIT_WAIT_S = 10.0
_names = itertools.count(1)


def _stub_client() -> str | None:
    """The kit's stub API client, which every command may import (None only if the kit was installed without it)."""
    from grader.shared.kit_files import stub_client

    try:
        return stub_client().read_text(encoding="utf-8")
    except OSError:
        return None


@lru_cache(maxsize=1)
def isolation_available() -> tuple[bool, str]:
    """Whether bubblewrap can make a network+PID+IPC namespace here, and why not if it cannot."""
    if not sys.platform.startswith("linux"):
        return False, f"namespaces need Linux (this is {sys.platform})"
    bwrap = shutil.which("bwrap")
    if bwrap is None:
        return False, "bubblewrap (bwrap) is not installed"
    true = shutil.which("true") or "/bin/true"
    try:
        done = subprocess.run(
            [
                bwrap,
                "--unshare-net",
                "--unshare-pid",
                "--unshare-ipc",
                "--die-with-parent",
                "--ro-bind",
                "/",
                "/",
                "--proc",
                "/proc",
                "--dev",
                "/dev",
                "--",
                true,
            ],
            check=False,
            capture_output=True,
            text=True,
            timeout=20,
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        return False, f"bwrap could not run ({exc})"
    if done.returncode != 0:
        why = (done.stderr.strip().splitlines() or [f"exit status {done.returncode}"])[-1]
        return False, f"bwrap cannot create namespaces here ({why})"
    version = (
        subprocess.run([bwrap, "--version"], check=False, capture_output=True, text=True).stdout.strip() or "bwrap"
    )
    return True, version


def _children(pid: int) -> list[int]:
    try:
        return [int(p) for p in Path(f"/proc/{pid}/task/{pid}/children").read_text().split()]
    except OSError:
        return []


class _Launch(NamedTuple):
    """How the harness is started, and where it finds what the sandbox gives it."""

    argv: list[str]
    box_root: str
    submission: str
    cgroups: dict[str, str]
    python_path: str
    cwd: str | None


class Sandbox(HarnessOperations):
    """`with Sandbox(submission_dir, limits=Limits()) as box:` — one isolated grading session.

    `isolate`: None uses namespaces when available (otherwise runs UNSANDBOXED, saying so in
    `note`); True raises SandboxError when they are unavailable; False never uses them.
    """

    def __init__(
        self, submission_dir: str | Path, *, limits: Limits | None = None, isolate: bool | None = None
    ) -> None:
        self.submission = Path(submission_dir)
        self.limits = limits or Limits()
        self._isolate = isolate
        self.isolated = False
        self.note = ""
        self.enforcement: Enforcement | None = None  # what holds each limit, once open
        self._proc: subprocess.Popen[str] | None = None
        self._responses: queue.Queue[str | None] = queue.Queue()
        self._stderr: collections.deque[str] = collections.deque(maxlen=200)
        self._threads: list[threading.Thread] = []
        self._cgroups: dict[str, Path] = {}
        self._tempdir: Path | None = None
        self._uid: uids.UidLease | None = None  # a uid of its own, where RLIMIT_NPROC holds the process limit
        self._lock = threading.Lock()
        self._closed = False

    # -- life cycle -------------------------------------------------------------------------

    def __enter__(self) -> Self:
        self.open()
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()

    def open(self) -> None:
        if not self.submission.is_dir():
            raise SandboxError(f"{self.submission}: the submission is not a folder")
        available, why = (
            isolation_available() if self._isolate is not False else (False, "isolation turned off by the caller")
        )
        if self._isolate and not available:
            raise SandboxRefused(f"isolation is required but unavailable: {why}")
        run_as = self._candidate_uid(available)
        cgroups = cg.create_sandbox_cgroups(f"grader-sandbox-{os.getpid()}-{next(_names)}")
        self._cgroups = dict(cgroups.folders)
        if run_as is not None and "pids" not in cgroups.controllers:
            # RLIMIT_NPROC will hold the process limit: a uid of its own, or side-by-side sandboxes share it
            self._uid = uids.lease(userns.unmapped)
            run_as = self._uid.uid if self._uid is not None else run_as
        kit = layout.kit_paths()
        layout.compile_kit(kit)
        try:
            launch = self._bwrap_launch(kit) if available else self._plain_launch(kit)
            config = HarnessConfig(
                box_root=launch.box_root,
                submission=launch.submission,
                python_bin=str(kit.python_bin),
                stub_client=_stub_client(),
                limits=self.limits,
                run_as=run_as,
                sweep_uid=run_as is not None,
                cgroup_version=cgroups.version,
                cgroups=launch.cgroups,
                cgroup_controllers=list(cgroups.controllers),
                isolated=available,
            )
            self.isolated = available
            self.enforcement = Enforcement(
                cgroups, run_as=run_as, rlimits=shutil.which("prlimit") is not None, isolated=available
            )
            self.note = self._describe(available, why, run_as)
            env = {
                "PATH": "/usr/local/bin:/usr/bin:/bin",
                "LANG": "C.UTF-8",
                "PYTHONPATH": launch.python_path,
                "PYTHONDONTWRITEBYTECODE": "1",
                CONFIG_ENV: config.to_env(),
            }
            self._proc = subprocess.Popen(
                launch.argv,
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                text=True,
                encoding="utf-8",
                env=env,
                cwd=launch.cwd,
                start_new_session=True,
            )
            self._start_readers()
            self._receive("start", _START_TIMEOUT_S)
        except BaseException:
            self.close()
            raise

    @staticmethod
    def _candidate_uid(available: bool) -> int | None:
        """The uid the candidate's commands run as: the sandbox's own when isolated as root, else none."""
        run_as = CANDIDATE_UID if available and os.geteuid() == 0 and shutil.which("setpriv") else None
        if run_as is not None and (unmapped := userns.unmapped(run_as)):
            raise SandboxRefused(unmapped)
        return run_as

    def _bwrap_launch(self, kit: layout.KitPaths) -> _Launch:
        """The harness inside bubblewrap: the kit, the submission and the cgroups where the namespace puts them."""
        if blocked := layout.in_the_way(kit):
            raise SandboxRefused(
                f"the kit lives at {blocked[0]}, inside a folder the sandbox makes for the candidate's "
                f"commands; install it (its virtual environment) anywhere but "
                + ", ".join(f"{layout.BOX_ROOT}/{name}" for name in layout.MADE_IN_BOX)
            )
        argv = layout.bwrap_argv(
            shutil.which("bwrap") or "bwrap",
            kit,
            self.submission.resolve(),
            disk_bytes=self.limits.disk_bytes,
            cgroups=self._cgroups,
            python=sys.executable,
        )
        cgroup_paths = {c: f"{layout.CGROUP_MOUNTS}/{c}" for c in self._cgroups}
        return _Launch(argv, layout.BOX_ROOT, layout.SUBMISSION_SOURCE, cgroup_paths, layout.KIT_COPY, None)

    def _plain_launch(self, kit: layout.KitPaths) -> _Launch:
        """The harness as a plain child process, in a temporary folder of its own (no namespace)."""
        self._tempdir = Path(tempfile.mkdtemp(prefix="grader-sandbox-"))
        argv = [sys.executable, "-m", "grader.sandbox.harness"]
        cgroup_paths = {c: str(p) for c, p in self._cgroups.items()}
        tempdir = str(self._tempdir)
        return _Launch(argv, tempdir, str(self.submission.resolve()), cgroup_paths, str(kit.grader.parent), tempdir)

    def _describe(self, isolated: bool, why: str, run_as: int | None) -> str:
        """The sandbox line: how the candidate is isolated, and what holds each limit.

        It starts with UNSANDBOXED when there is no namespace, else with NOT ENFORCED when a limit
        is held by nothing, so that a report can open with it.
        """
        assert self.enforcement is not None
        limits = self.enforcement.line(self.limits)
        if not isolated:
            return (
                f"UNSANDBOXED: {why}; candidate code runs as this user with this user's file access "
                f"and network; {limits}"
            )
        who = (
            f"uid {run_as}"
            if run_as is not None
            else "the grader's own uid (not root: it can read the harness's files)"
        )
        line = (
            f"{why}: own network (loopback only), PID and IPC namespaces; read-only allowlisted filesystem; "
            f"candidate as {who}; {limits}"
        )
        missing = self.enforcement.unenforced()
        return f"{NOT_ENFORCED} {'; '.join(missing)}. {line}" if missing else line

    def close(self) -> None:
        """End everything: ask the harness to stop, kill the namespace, remove cgroups and temp files."""
        if self._closed:
            return
        self._closed = True
        proc = self._proc
        if proc is not None and proc.poll() is None:
            with contextlib.suppress(SandboxError, OSError, ValueError):
                self._request("shutdown", {}, timeout_s=20.0, closing=True)
            with contextlib.suppress(subprocess.TimeoutExpired):
                proc.wait(_EXIT_WAIT_S)  # the harness has exited: bubblewrap follows with its whole namespace
            self._kill()
        if proc is not None:
            proc.wait()
            for pipe in (proc.stdin, proc.stdout, proc.stderr):
                with contextlib.suppress(OSError):
                    if pipe is not None:
                        pipe.close()
        for thread in self._threads:
            thread.join(5)
        left = cg.remove_tree(self._cgroups.values())
        self._cgroups = {}
        if self._uid is not None:
            self._uid.release()  # no process of it is left: the namespace is gone
            self._uid = None
        if self._tempdir is not None:
            shutil.rmtree(self._tempdir, ignore_errors=True)
            self._tempdir = None
        if left:
            raise SandboxError(f"could not remove cgroups {', '.join(left)}")

    # -- the wire ---------------------------------------------------------------------------

    def _start_readers(self) -> None:
        assert self._proc is not None and self._proc.stdout is not None and self._proc.stderr is not None
        out, err = self._proc.stdout, self._proc.stderr

        def read_out(stream: IO[str]) -> None:
            for line in stream:
                self._responses.put(line)
            self._responses.put(None)

        def read_err(stream: IO[str]) -> None:
            for line in stream:
                self._stderr.append(line.rstrip("\n")[:2000])

        for target, stream in ((read_out, out), (read_err, err)):
            thread = threading.Thread(target=target, args=(stream,), name="sandbox-reader", daemon=True)
            thread.start()
            self._threads.append(thread)

    def _receive(self, op: str, timeout_s: float) -> Any:
        try:
            line = self._responses.get(timeout=timeout_s)
        except queue.Empty:
            self._kill()
            raise SandboxError(f"{op}: the sandbox did not answer within {timeout_s:g}s; it was ended") from None
        if line is None:
            time.sleep(0.05)  # let the stderr reader catch the last words
            raise SandboxError(f"{op}: the sandbox ended unexpectedly: {self._last_words()}")
        try:
            response = json.loads(line)
        except json.JSONDecodeError:
            raise SandboxError(f"{op}: the sandbox answered something that is not JSON: {line[:200]!r}") from None
        if "error" in response:
            raise SandboxError(str(response["error"]))
        return response.get("result")

    def _last_words(self) -> str:
        lines = [line for line in self._stderr if line.strip()]
        return " | ".join(lines[-5:]) or "no message"

    def _kill(self) -> None:
        """End the namespace from its top: kill bubblewrap's child (the namespace's init) so the
        kernel kills every process in it and bubblewrap reaps it, then bubblewrap itself.

        Killing only bubblewrap would orphan its child to the host's init, which may be slow
        (or, in a container, never) to reap it.
        """
        proc = self._proc
        if proc is None or proc.poll() is not None:
            return
        for child in _children(proc.pid):
            with contextlib.suppress(OSError):
                os.kill(child, signal.SIGKILL)
        with contextlib.suppress(subprocess.TimeoutExpired):
            proc.wait(_EXIT_WAIT_S)
        with contextlib.suppress(OSError):
            proc.kill()

    def _request(self, op: str, args: dict[str, Any], *, timeout_s: float, closing: bool = False) -> Any:
        with self._lock:
            if (self._closed and not closing) or self._proc is None or self._proc.poll() is not None:
                raise SandboxError(f"{op}: the sandbox is not running ({self._last_words()})")
            assert self._proc.stdin is not None
            try:
                self._proc.stdin.write(json.dumps({"op": op, "args": args}) + "\n")
                self._proc.stdin.flush()
            except (OSError, ValueError) as exc:
                # its harness is gone, though bubblewrap has not exited yet: the same end as an answer cut off
                raise SandboxError(f"{op}: the sandbox ended unexpectedly ({exc}): {self._last_words()}") from None
            return self._receive(op, timeout_s)
