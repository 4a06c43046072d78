"""Submissions that take their time, built from the reference: one correct but slow, one that hangs.

- `slow`: each command does what the reference's does, then waits as long again before it exits (the
  load generator and the sizing command take twice the reference's time on every run).
- `hung`: the load generator never exits, and the gateway listens but never answers a request.

Both wrap the reference's own commands (`python -m loadgen`, `gateway/gateway.py`) with a small
script, so the reference's code stays as it is. Used by tests/rooms/grading/test_time_to_verdict.py and
bench/hang.py.
"""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import yaml

ROOT = Path(__file__).resolve().parent.parent
REFERENCE = ROOT / "submissions" / "reference"

_TWICE = '''\
"""Run a command, then wait as long again: twice its time, the same result."""
import subprocess, sys, time

started = time.monotonic()
code = subprocess.call(sys.argv[1:])
time.sleep(time.monotonic() - started)
sys.exit(code)
'''

_FOREVER = '''\
"""Never exit."""
import time

while True:
    time.sleep(60)
'''

_SILENT_GATEWAY = '''\
"""Listen on the port the grader gives, read every request, answer none."""
import asyncio, sys

port = int(sys.argv[sys.argv.index("--port") + 1])


async def swallow(reader, writer):
    while await reader.read(65536):
        pass


async def main():
    server = await asyncio.start_server(swallow, "127.0.0.1", port)
    async with server:
        await server.serve_forever()

asyncio.run(main())
'''


def _copy(dest: Path) -> dict[str, Any]:
    shutil.copytree(REFERENCE, dest, ignore=shutil.ignore_patterns("__pycache__", ".pytest_cache"))
    data: dict[str, Any] = yaml.safe_load((dest / "submission.yaml").read_text())
    return data


def _write(dest: Path, data: dict[str, Any]) -> Path:
    (dest / "submission.yaml").write_text(yaml.safe_dump(data, sort_keys=False))
    return dest


def slow(dest: Path) -> Path:
    """The reference, with its load generator and sizing command taking twice its time on every run."""
    data = _copy(dest)
    (dest / "twice.py").write_text(_TWICE)
    data["loadgen"]["command"] = ["python", "twice.py", "python", "-m", "loadgen"]
    data["sizing"]["command"] = ["python", "twice.py", *data["sizing"]["command"]]
    return _write(dest, data)


def hung(dest: Path) -> Path:
    """The reference, with a load generator that never exits and a gateway that never answers."""
    data = _copy(dest)
    (dest / "forever.py").write_text(_FOREVER)
    (dest / "silent_gateway.py").write_text(_SILENT_GATEWAY)
    data["loadgen"]["command"] = ["python", "forever.py"]
    data["gateway"]["command"] = ["python", "silent_gateway.py"]
    return _write(dest, data)
