"""Waiting for the end of an engine step: cheap by default, precise on request.

Both clocks wait until an absolute deadline (the engine lays its steps end to end on a fixed
timeline, so a late wake-up shortens the next wait instead of stretching time), and both yield to
the event loop at least once per step, even when the deadline has already passed: that is the
moment the stream writers send the previous step's tokens, so a late engine never runs several
steps back to back while the writers wait.

- `cheap` (the default) sleeps on the loop's timer and nothing else. The timer wakes up to about
  a millisecond late (epoll's millisecond timeout, and a virtual CPU's own wake-up time), which
  the next step's shorter wait absorbs. One stream costs a few percent of a core.
- `precise` sleeps on the timer until `margin` before the deadline and spins (yielding) for the
  rest, with a margin it adapts to the lateness it has seen. Steps end within a fraction of a
  millisecond of their deadline, at the price of a busy core for that fraction of every step.
"""

from __future__ import annotations

import asyncio
import time
from collections import deque

__all__ = ["TIMING_MODES", "CheapClock", "PreciseClock", "StepClock", "clock_for"]

TIMING_MODES = ("cheap", "precise")


class CheapClock:
    """Timer-only waits: no busy-wait at all."""

    # A step ending later than this restarts the timeline from now rather than catching up.
    reanchor = 0.005

    async def sleep_until(self, deadline: float) -> None:
        delay = deadline - time.perf_counter()
        await asyncio.sleep(max(0, delay))


class PreciseClock:
    """Timer waits to `margin` before the deadline, then a yielding spin to the deadline."""

    reanchor = 0.002

    def __init__(self) -> None:
        self.margin = 0.001
        self._recent: deque[float] = deque(maxlen=64)

    async def sleep_until(self, deadline: float) -> None:
        coarse = deadline - self.margin
        if coarse - time.perf_counter() > 0:
            await asyncio.sleep(coarse - time.perf_counter())
            self._recent.append(max(0.0, time.perf_counter() - coarse))
            self.margin = min(0.004, max(0.0003, max(self._recent) + 0.0002))
        await asyncio.sleep(0)
        while time.perf_counter() < deadline:
            await asyncio.sleep(0)


StepClock = CheapClock | PreciseClock


def clock_for(mode: str) -> StepClock:
    if mode == "precise":
        return PreciseClock()
    if mode == "cheap":
        return CheapClock()
    raise ValueError(f"timing must be one of {', '.join(TIMING_MODES)} (got {mode!r})")
