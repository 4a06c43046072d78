"""Writes 1 MiB blocks into its work folder until refused, stopping by itself at 2 GiB."""

import json
import os

block, written, error = b"\0" * (1024 * 1024), 0, ""
fd = os.open("fill.bin", os.O_WRONLY | os.O_CREAT, 0o644)
try:
    while written < 2048:
        os.write(fd, block)
        written += 1
except OSError as exc:
    error = exc.strerror or str(exc)
os.close(fd)
os.unlink("fill.bin")
print("FINDINGS " + json.dumps({"written_mib": written, "error": error}), flush=True)
