"""Double-forks, starts a new session and listens on a port, to outlive the run (for at most 120 s)."""

import json
import os
import socket
import sys
import time

if os.fork() > 0:
    time.sleep(0.5)  # let the daemon start before the command ends
    print("FINDINGS " + json.dumps({"daemonized": True}), flush=True)
    sys.exit(0)
os.setsid()
if os.fork() > 0:
    os._exit(0)
listener = socket.socket()
listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
listener.bind(("127.0.0.1", 0))
listener.listen()
for fd in (0, 1, 2):
    os.close(fd)
time.sleep(120)
