"""Sends SIGKILL to every pid it can see, then kill(-1), and says which signals were delivered."""

import json
import os
import signal

me = os.getpid()
delivered, refused = [], 0
for name in os.listdir("/proc"):
    if name.isdigit() and int(name) != me:
        try:
            os.kill(int(name), signal.SIGKILL)
            delivered.append(int(name))
        except OSError:
            refused += 1
print("FINDINGS " + json.dumps({"delivered": delivered, "refused": refused}), flush=True)
signal.signal(signal.SIGTERM, signal.SIG_IGN)
try:
    os.kill(-1, signal.SIGTERM)  # every process this uid may signal, in its PID namespace
except OSError:
    pass
