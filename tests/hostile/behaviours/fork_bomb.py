"""Forks until refused, at most 3000 processes; each child sleeps 60 s (bounded) and exits."""

import json
import os
import sys
import time

forked, refused = 0, ""
deadline = time.monotonic() + 20
while forked < 3000 and time.monotonic() < deadline:
    try:
        pid = os.fork()
    except OSError as exc:
        refused = exc.strerror or str(exc)
        break
    if pid == 0:
        time.sleep(60)
        os._exit(0)
    forked += 1
print("FINDINGS " + json.dumps({"forked": forked, "refused": refused}), flush=True)
sys.exit(0)
