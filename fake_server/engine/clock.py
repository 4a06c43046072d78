"""Waiting for the end of an engine step: on a high-resolution timer by default.

Every clock waits until an absolute deadline (the engine lays its steps end to end on a fixed
timeline, so a late wake-up shortens the next wait instead of stretching time), and every clock
yields to the event loop at least once per step, even when the deadline has already passed: that
is the moment the stream writers send the previous step's tokens, so a late engine never runs
several steps back to back while the writers wait.

The `timing` setting chooses the clock:

- `auto` (the default) sleeps on the kernel's high-resolution timer (timers.py: timerfd on Linux,
  a kqueue timer on macOS), which the event loop reads like a socket. On a quiet machine it wakes
  0.1-0.3 ms after the deadline, with no busy-wait. Where there is no such timer it is `loop`;
  where setting one up fails, or it fails later, it is `loop` too, with a one-line warning.
- `loop` sleeps on the event loop's own timer. epoll's timeout is whole milliseconds, so it wakes
  up to about a millisecond late, which the next step's shorter wait absorbs.

Former names are still accepted: `cheap` (the loop's timer) is `loop`, and `precise`, which spun
for the last fraction of a millisecond, is `auto`: the timer is within a fifth of a millisecond of
what the spin gave, for a few percent of a core instead of up to a whole one (bench/README.md).

Each clock names what it waits on (`kind`): `timerfd`, `kqueue` or `loop`.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time

from fake_server.engine.timers import KernelTimer, open_timer

__all__ = ["TIMING_ALIASES", "TIMING_MODES", "LoopClock", "StepClock", "TimerClock", "clock_for"]

TIMING_MODES = ("auto", "loop")
TIMING_ALIASES = {"cheap": "loop", "precise": "auto"}  # former names, still accepted

_log = logging.getLogger("fake_server")


class LoopClock:
    """The event loop's timer only: no busy-wait, up to about a millisecond late."""

    kind = "loop"
    # A step ending later than this restarts the timeline from now rather than catching up.
    reanchor = 0.005

    async def sleep_until(self, deadline: float) -> None:
        delay = deadline - time.perf_counter()
        await asyncio.sleep(max(0, delay))

    def close(self) -> None:
        pass


class TimerClock:
    """The kernel's high-resolution timer: no busy-wait, a fraction of a millisecond late.

    Should the timer fail once set up (the loop cannot read descriptors, arming fails), the clock
    says so in one warning and waits on the loop's timer from then on."""

    reanchor = 0.005

    def __init__(self, timer: KernelTimer) -> None:
        self._timer: KernelTimer | None = timer
        self.kind = timer.kind

    async def sleep_until(self, deadline: float) -> None:
        if deadline <= time.perf_counter():
            await asyncio.sleep(0)
            return
        if self._timer is not None:
            try:
                await self._timer.sleep_until(deadline)
                return
            except Exception as exc:  # noqa: BLE001 - a failing timer means the loop's timer, never a crash
                self._fall_back(exc)
        await asyncio.sleep(max(0, deadline - time.perf_counter()))

    def _fall_back(self, exc: Exception) -> None:
        _log.warning("fake-server: the %s step timer failed (%s); steps wait on the event loop's timer", self.kind, exc)
        timer, self._timer, self.kind = self._timer, None, "loop"
        if timer is not None:
            with contextlib.suppress(Exception):
                timer.close()

    def close(self) -> None:
        if self._timer is not None:
            self._timer.close()


StepClock = LoopClock | TimerClock


def clock_for(mode: str) -> StepClock:
    """The clock of a timing mode. `auto` never fails: without a usable timer it is the loop's."""
    mode = TIMING_ALIASES.get(mode, mode)
    if mode == "loop":
        return LoopClock()
    if mode != "auto":
        raise ValueError(f"timing must be one of {', '.join(TIMING_MODES)} (got {mode!r})")
    try:
        timer = open_timer()
    except Exception as exc:  # noqa: BLE001 - any failure to set up the timer means the loop's timer, never a crash
        _log.warning("fake-server: no high-resolution step timer (%s); steps wait on the event loop's timer", exc)
        return LoopClock()
    return LoopClock() if timer is None else TimerClock(timer)
