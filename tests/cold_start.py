"""A correct load generator whose first request pays a cold start, built from the reference.

The reference's client, changed in one thing only: its first request's `start` comes 150 ms before its
bytes, as a client's imports and first connection make it on a slow or busy machine (a real one was seen
73.6 ms early on a quiet one). It waits for no concurrency slot of its own, so every criterion that reads
`start` must keep passing; `ttft-includes-slot-wait`, which starts the clock before its slot, must still
fail them.
"""

from __future__ import annotations

import shutil
from pathlib import Path

from grader.kit.chaff import Edit, edited

ROOT = Path(__file__).resolve().parent.parent
COLD_S = 0.15
EDIT = Edit(
    "loadgen/client.py",
    "    start = sent.at if sent.at is not None else handed_over\n",
    f"    start = (sent.at if sent.at is not None else handed_over) - ({COLD_S} if index == 0 else 0.0)\n",
)


def build(dest: Path) -> Path:
    """The cold-start client as a submission in the folder `dest` (which must not exist)."""
    shutil.copytree(ROOT / "submissions" / "reference", dest, ignore=shutil.ignore_patterns("__pycache__"))
    path = dest / EDIT.file
    path.write_text(edited(path.read_text(encoding="utf-8"), EDIT, "the cold-start client"), encoding="utf-8")
    return dest
