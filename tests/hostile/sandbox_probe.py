"""Open a Sandbox wherever this runs (a row of hosts.py) and print, as one JSON line, what it says it
enforces and what candidate commands met in it.

    python tests/hostile/sandbox_probe.py SUBMISSION_FOLDER MARKER

The submission folder must be readable by whoever runs this. Commands, in order:
1. `id`, its cgroup, its rlimits and capabilities; a `sleep` past its wall clock; a file the grader
   writes into the work folder twice (the second replaces the first, the candidate's by then), copied by the candidate to one only its owner may read, read back;
2. a spawned `sleep`, alive through the next two, so that the end of each of them cannot be a sweep
   of the candidate's uid (the harness sweeps only when no candidate command is alive): what ends
   their processes is the cgroup, or nothing;
3. a fork loop whose children each leave the process group (setsid) and sleep, bounded at 300;
4. a double-forked setsid daemon that sleeps;
5. a count of the processes still alive that carry MARKER (the loop's children and the daemon).
Every process carries MARKER in its command line, so the caller can look for them on the machine too.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from grader.sandbox import Limits, Sandbox, SandboxError, SandboxRefused

LIMITS = Limits(cpu_s=20, memory_bytes=256 * 1024**2, pids=64, output_bytes=1024**2, disk_bytes=48 * 1024**2)

FORK_LOOP = """
import os, sys, time
forked, error = 0, ""
for _ in range(300):
    try:
        pid = os.fork()
    except OSError as exc:
        error = exc.strerror
        break
    if pid == 0:
        os.setsid()
        time.sleep(30)
        os._exit(0)
    forked += 1
print(forked, error or "none", flush=True)
"""

DAEMON = """
import os, sys, time
if os.fork() == 0:
    os.setsid()
    if os.fork() == 0:
        time.sleep(60)
    os._exit(0)
time.sleep(0.3)
print("daemon started", flush=True)
"""

COUNT = """
import os, sys
me, hits = os.getpid(), 0
for name in os.listdir("/proc"):
    if name.isdigit() and int(name) != me:
        try:
            with open(f"/proc/{name}/cmdline", "rb") as fh:
                hits += sys.argv[1].encode() in fh.read()
        except OSError:
            pass
print(hits)
"""


def main(folder: Path, marker: str) -> dict[str, object]:
    seen: dict[str, object] = {}
    try:
        with Sandbox(folder, limits=LIMITS, isolate=True) as box:
            assert box.enforcement is not None
            seen.update(
                isolated=box.isolated,
                note=box.note,
                holders=box.enforcement.holders(),
                cgroups=[str(p) for p in box._cgroups.values()],
            )
            script = (
                "id -u; grep -E '^0::|pids' /proc/self/cgroup; grep -E 'processes|address' /proc/self/limits; "
                "grep -E '^(Cap|NoNewPrivs)' /proc/self/status"
            )
            who = box.run(["sh", "-c", script], timeout_s=20)
            seen["who"] = [" ".join(line.split()) for line in who.stdout_tail.splitlines()]
            late = box.run(["sleep", "6"], timeout_s=1)
            seen["wall_timeout"] = [late.killed, late.wall_s < 4]
            box.write_file("given.txt", "an earlier config")  # given to the candidate's uid, then
            box.write_file("given.txt", "from the grader")  # replaced (a pod's root has no CAP_FOWNER)
            files = box.run(
                ["sh", "-c", "cat given.txt > back.txt && chmod 600 back.txt"], timeout_s=20, files_back=["back.txt"]
            )
            seen["files"] = files.files.get("back.txt")
            sleeper = box.spawn(["sleep", "15"], timeout_s=60)
            loop = box.run(["python", "-c", FORK_LOOP, marker], timeout_s=60)
            seen["fork_loop"] = loop.stdout_tail.split()
            seen["fork_loop_limits_hit"] = loop.limits_hit
            daemon = box.run(["python", "-c", DAEMON, marker], timeout_s=30)
            seen["daemon"] = daemon.stdout_tail.strip()
            count = box.run(["python", "-c", COUNT, marker], timeout_s=20).stdout_tail.strip()
            seen["alive_after"] = int(count) if count.isdigit() else count
            box.stop(sleeper)
    except SandboxError as exc:
        seen["error"] = str(exc)
        seen["refused"] = isinstance(exc, SandboxRefused)  # before anything ran
    return seen


if __name__ == "__main__":
    print(json.dumps(main(Path(sys.argv[1]), sys.argv[2])), flush=True)
