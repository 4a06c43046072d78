"""Opens connections to the fake server until refused: at most 5000, for at most 20 s."""

import json
import socket
import sys
import time
import urllib.parse

url = urllib.parse.urlsplit(sys.argv[sys.argv.index("--base-url") + 1])
held: list[socket.socket] = []
error = ""
deadline = time.monotonic() + 20
while len(held) < 5000 and time.monotonic() < deadline:
    try:
        held.append(socket.create_connection((url.hostname, url.port), timeout=5))
    except OSError as exc:
        error = exc.strerror or str(exc)
        break
print("FINDINGS " + json.dumps({"opened": len(held), "error": error}), flush=True)
time.sleep(1)
