"""How much of a run's time some process waited for a core: the machine's own account of being too busy.

A fake server knows when its own steps ran late, but not when the candidate's client, busy parsing, waited
for a core behind other work: the client then reads a chunk late, and its TTFT is long by however long it
waited, while the server's steps, asleep between tokens, kept time. Linux counts every such wait (pressure
stall information, /proc/pressure/cpu): the microseconds in which at least one runnable task had no core.
Over a run, that total's growth over the run's wall time is the share of the run the machine was
oversubscribed. Where the system keeps no such count (not Linux, or a kernel without it) the share is None,
and only the servers' own lateness says the machine was busy.
"""

from __future__ import annotations

import time
from pathlib import Path

__all__ = ["CpuWait"]

_PRESSURE = Path("/proc/pressure/cpu")


def _waited_us() -> int | None:
    """The microseconds in which some task waited for a core, since boot (None: not kept here)."""
    try:
        for line in _PRESSURE.read_text().splitlines():
            if line.startswith("some "):
                return int(line.rsplit("total=", 1)[1])
    except (OSError, IndexError, ValueError):
        return None
    return None


class CpuWait:
    """Started when made; `share()` is the part of the time since then in which some task waited for a core."""

    def __init__(self) -> None:
        self._start_us = _waited_us()
        self._started = time.monotonic()

    def share(self) -> float | None:
        """0 (never) to 1 (throughout), rounded to 3 places; None where the system keeps no count."""
        now_us = _waited_us()
        wall = time.monotonic() - self._started
        if self._start_us is None or now_us is None or wall <= 0:
            return None
        return round(min(1.0, max(0.0, (now_us - self._start_us) / 1e6 / wall)), 3)
