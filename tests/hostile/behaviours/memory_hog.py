"""Allocates and touches memory 64 MiB at a time, saying how much it holds, stopping by itself at 3 GiB."""

import json
import sys

held = []
for _ in range(48):
    held.append(bytearray(64 * 1024 * 1024))  # zero-filled: every page is written
    print(f"holding {64 * len(held)} MiB", file=sys.stderr, flush=True)
print("FINDINGS " + json.dumps({"held_mib": 64 * len(held)}), flush=True)
