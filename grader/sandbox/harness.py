"""The trusted main process inside the sandbox: `python -m grader.sandbox.harness`.

It prepares the work folder, then answers one JSON-line request at a time on stdin/stdout (see
grader.sandbox.protocol). Its stdout carries only the protocol: file descriptor 1 is pointed at
stderr at start, so a stray print in any library cannot corrupt a response. An operation that
fails answers {"error": ...}; the harness itself ends only on `shutdown` or end of input.
"""

from __future__ import annotations

import json
import os
import shutil
import stat
import sys
import traceback
from collections.abc import Callable
from pathlib import Path
from typing import Any, TextIO

from .jobs import CommandSpec, Job, JobContext
from .netops import HeldPort, http_many, http_request, wait_port
from .protocol import HarnessConfig
from .servers import ServerPool

__all__ = ["Harness", "main"]


class Harness:
    def __init__(self, config: HarnessConfig) -> None:
        self.config = config
        self.ctx = JobContext(config)
        self.servers = ServerPool()
        self.spawned: dict[str, Job] = {}
        self.held: list[HeldPort] = []
        self.ops: dict[str, Callable[[dict[str, Any]], Any]] = {
            "serve": lambda a: self.servers.serve(_req(a, "name"), a.get("settings") or {}),
            "configure": lambda a: self.servers.configure(_req(a, "name"), a.get("settings") or {}),
            "set_faults": lambda a: self.servers.set_faults(_req(a, "name"), _req(a, "faults")),
            "reset": lambda a: self.servers.reset(_req(a, "name")),
            "stop_server": lambda a: self.servers.stop(_req(a, "name")),
            "endpoint_calls": lambda a: {
                "calls": self.servers.endpoint_calls(_req(a, "name"), _req(a, "endpoint"), _number(a, "since", 0.0))
            },
            "hold_port": self._hold_port,
            "ledger": lambda a: {"records": self.servers.ledger(_req(a, "name"), _number(a, "settle", 2.0))},
            "run": self._run,
            "spawn": self._spawn,
            "stop": self._stop,
            "wait_port": self._wait_port,
            "http": lambda a: http_request(
                a.get("method", "GET"),
                _req(a, "url"),
                headers=a.get("headers"),
                json=a.get("json"),
                stream=bool(a.get("stream")),
                timeout_s=_number(a, "timeout_s", 30.0),
            ),
            "http_many": lambda a: http_many(_req(a, "requests"), timeout_s=_number(a, "timeout_s", 30.0)),
            "write_file": self._write_file,
        }

    def prepare(self) -> None:
        """Lay out the writable area: work (the submission's copy), home, tmp, inject."""
        root = self.ctx.root
        work = self.ctx.work
        shutil.copytree(self.config.submission, work, symlinks=True, copy_function=_copy_regular)
        for name in ("home", "tmp"):
            (root / name).mkdir(mode=0o700)
        (root / "inject").mkdir(mode=0o755)
        uid = self.config.run_as
        if uid is not None:
            for folder in (work, root / "home", root / "tmp"):
                _chown_tree(folder, uid)

    def handle(self, request: Any) -> dict[str, Any]:
        if not isinstance(request, dict) or not isinstance(request.get("op"), str):
            return {"error": "a request is a JSON object with an 'op' string"}
        op, args = request["op"], request.get("args") or {}
        if not isinstance(args, dict):
            return {"error": f"{op}: args must be a JSON object"}
        fn = self.ops.get(op)
        if fn is None:
            return {"error": f"unknown op {op!r} (known: {', '.join(sorted([*self.ops, 'shutdown']))})"}
        try:
            return {"result": fn(args)}
        except (ValueError, KeyError, TypeError, OSError, RuntimeError) as exc:
            return {"error": f"{op}: {exc}"}
        except Exception as exc:  # noqa: BLE001 - an op must never end the harness
            traceback.print_exc(file=sys.stderr)
            return {"error": f"{op}: {type(exc).__name__}: {exc}"}

    def _run(self, args: dict[str, Any]) -> dict[str, Any]:
        job = Job(self.ctx, CommandSpec.from_args(args, default_timeout=60.0), progress=self.servers.finished)
        job.start()
        return job.wait().to_dict()

    def _spawn(self, args: dict[str, Any]) -> dict[str, str]:
        job = Job(self.ctx, CommandSpec.from_args(args, default_timeout=600.0))
        job.start()
        self.spawned[job.name] = job
        return {"handle": job.name}

    def _wait_port(self, args: dict[str, Any]) -> dict[str, Any]:
        """Wait for a port; given the handle of the spawned command that is to listen on it, no longer than
        that command lives (a gateway that exits at its start fails at once, not after the start limit)."""
        handle = args.get("handle")
        job = self.spawned.get(handle) if isinstance(handle, str) else None
        if handle is not None and job is None:
            raise ValueError(f"no spawned command {handle!r} (live: {', '.join(sorted(self.spawned)) or 'none'})")
        return wait_port(_req(args, "port"), _number(args, "timeout_s", 10.0), gone=job.gone if job else None)

    def _write_file(self, args: dict[str, Any]) -> dict[str, str]:
        """A grader-written file (a gateway's config) in the work folder, owned by the candidate's user."""
        name, text = _req(args, "name"), _req(args, "text")
        if not isinstance(name, str) or not name or "/" in name or name in (".", ".."):
            raise ValueError(f"write_file: {name!r} is not a plain file name")
        if not isinstance(text, str):
            raise TypeError("write_file: text must be a string")
        path = self.ctx.work / name
        # Replaced, never written through: a link the candidate planted is not followed, and a file of
        # that name the candidate owns (the config given to an earlier case) cannot have its mode changed
        # by a root without CAP_FOWNER, which the Kubernetes Job's pod does not keep.
        if path.is_symlink() or path.exists():
            path.unlink()
        path.write_text(text, encoding="utf-8")
        path.chmod(0o644)
        if self.config.run_as is not None:
            os.lchown(path, self.config.run_as, self.config.run_as)
        return {"path": str(path)}

    def _stop(self, args: dict[str, Any]) -> dict[str, Any]:
        handle = args.get("handle")
        job = self.spawned.pop(handle, None) if isinstance(handle, str) else None
        if job is None:
            raise ValueError(f"no spawned command {handle!r} (live: {', '.join(sorted(self.spawned)) or 'none'})")
        return job.stop().to_dict()

    def _hold_port(self, args: dict[str, Any]) -> dict[str, Any]:
        """Make a loopback port (a stopped server's) hang every connect until the client gives up."""
        self.held.append(HeldPort(_req(args, "port")))
        return {"held": self.held[-1].port}

    def close(self) -> None:
        for handle in list(self.spawned):
            self.spawned.pop(handle).stop()
        for held in self.held:
            held.close()
        self.servers.close()
        self.ctx.sweep()


def _req(args: dict[str, Any], key: str) -> Any:
    if key not in args:
        raise ValueError(f"missing argument {key!r}")
    return args[key]


def _number(args: dict[str, Any], key: str, default: float) -> float:
    value = args.get(key, default)
    if isinstance(value, bool) or not isinstance(value, (int, float)) or value < 0:
        raise ValueError(f"{key} must be a number of seconds (got {value!r})")
    return float(value)


def _copy_regular(src: str, dst: str) -> None:
    """Copy a regular file with its mode; skip a FIFO, socket or device (opening a FIFO would block)."""
    if stat.S_ISREG(os.lstat(src).st_mode):
        shutil.copy2(src, dst)
    else:
        print(f"sandbox: not copied into the work folder (not a regular file): {src}", file=sys.stderr)


def _chown_tree(top: Path, uid: int) -> None:
    os.lchown(top, uid, uid)
    for dirpath, dirnames, filenames in os.walk(top):
        for name in dirnames + filenames:
            os.lchown(os.path.join(dirpath, name), uid, uid)


def serve_forever(harness: Harness, requests: TextIO, responses: TextIO) -> None:
    for line in requests:
        if not line.strip():
            continue
        try:
            request = json.loads(line)
        except json.JSONDecodeError as exc:
            response: dict[str, Any] = {"error": f"request is not JSON ({exc.msg})"}
        else:
            if isinstance(request, dict) and request.get("op") == "shutdown":
                harness.close()
                responses.write(json.dumps({"result": {"bye": True}}) + "\n")
                responses.flush()
                return
            response = harness.handle(request)
        responses.write(json.dumps(response) + "\n")
        responses.flush()


def main() -> None:
    config = HarnessConfig.from_env()
    responses = os.fdopen(os.dup(1), "w", encoding="utf-8")
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    harness = Harness(config)
    try:
        harness.prepare()
    except OSError as exc:
        responses.write(json.dumps({"error": f"cannot prepare the work folder: {exc}"}) + "\n")
        responses.flush()
        raise SystemExit(1) from None
    responses.write(json.dumps({"result": {"ready": True, "tools": harness.ctx.tools}}) + "\n")
    responses.flush()
    try:
        serve_forever(harness, sys.stdin, responses)
    finally:
        harness.close()


if __name__ == "__main__":
    main()
