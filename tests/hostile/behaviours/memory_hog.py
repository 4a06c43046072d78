"""Allocates and touches memory 64 MiB at a time, stopping by itself at 3 GiB."""

import json

held = []
for _ in range(48):
    held.append(bytearray(64 * 1024 * 1024))  # zero-filled: every page is written
print("FINDINGS " + json.dumps({"held_mib": 64 * len(held)}), flush=True)
