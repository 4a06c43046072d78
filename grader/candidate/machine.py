"""How busy the machine a self-check runs on is, and waiting for it to be quiet.

A timing criterion judged while other work holds the cores may come out `inconclusive`: the fake server
could not keep its own time, so neither can a client beside it. `grader check` warns before it starts on a
machine already busy, and judges such criteria again once the machine is quiet (`wait_for_quiet`), so that a
busy laptop costs a candidate a wait, never points.

The load average (1 minute) is what every Unix reports; Linux also says how many tasks are runnable right now
(/proc/loadavg), which tells sooner when a burst of other work has ended.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

__all__ = ["Load", "load_now", "wait_for_quiet"]

_LOADAVG = Path("/proc/loadavg")


@dataclass(frozen=True)
class Load:
    average: float  # the 1-minute load average
    cores: int
    runnable: int | None  # tasks runnable at this moment, besides this one (Linux only)

    @property
    def busy(self) -> bool:
        """More work than cores: the 1-minute average, or the tasks runnable now where the system says."""
        return self.average > self.cores or (self.runnable is not None and self.runnable > self.cores)

    @property
    def quiet(self) -> bool:
        """Room for a grade's own processes: a core free now, and on average."""
        now_free = self.runnable is None or self.runnable < self.cores
        return now_free and self.average < self.cores

    def __str__(self) -> str:
        now = f", {self.runnable} runnable now" if self.runnable is not None else ""
        return f"load {self.average:.1f} on {self.cores} core{'s' if self.cores != 1 else ''}{now}"


def load_now() -> Load:
    """The machine's load as the system reports it."""
    cores = os.cpu_count() or 1
    try:
        average = os.getloadavg()[0]
    except OSError:  # a system that keeps none
        return Load(0.0, cores, None)
    runnable = None
    try:
        running = _LOADAVG.read_text().split()[3]  # "2/108": runnable / all tasks
        runnable = max(0, int(running.split("/")[0]) - 1)  # this process is one of them
    except (OSError, IndexError, ValueError):
        pass
    return Load(average, cores, runnable)


def wait_for_quiet(
    max_s: float,
    *,
    settle_s: float = 3.0,
    poll_s: float = 1.0,
    measure: Callable[[], Load] = load_now,
    sleep: Callable[[float], None] = time.sleep,
    clock: Callable[[], float] = time.monotonic,
) -> tuple[bool, Load]:
    """Wait until the machine has been quiet for `settle_s` in a row, at most `max_s`; whether it was, and the
    load last seen."""
    started = clock()
    quiet_since: float | None = None
    load = measure()
    while True:
        now = clock()
        if load.quiet:
            quiet_since = now if quiet_since is None else quiet_since
            if now - quiet_since >= settle_s:
                return True, load
        else:
            quiet_since = None
        if now - started >= max_s:
            return False, load
        sleep(poll_s)
        load = measure()
