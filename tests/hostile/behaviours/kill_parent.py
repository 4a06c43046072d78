"""Kills its parent (the trusted harness), then every ancestor it can name."""

import json
import os
import signal

tried: dict[int, str | None] = {}
pid = os.getppid()
for _ in range(5):
    try:
        os.kill(pid, signal.SIGKILL)
        tried[pid] = "killed"
    except OSError as exc:
        tried[pid] = exc.strerror
    try:
        with open(f"/proc/{pid}/stat") as stat:
            pid = int(stat.read().rsplit(")", 1)[1].split()[1])
    except OSError:
        break
    if pid <= 0:
        break
print("FINDINGS " + json.dumps({"tried": tried}), flush=True)
