"""The kernel's high-resolution timers, read by the event loop: waking at a deadline, on time.

asyncio's own timer waits in `epoll_wait`, whose timeout is whole milliseconds rounded up, so a
wake-up lands up to a millisecond after its deadline, plus the machine's own wake-up time. A
kernel timer armed for an absolute deadline with nanosecond resolution, and registered with the
loop as a reader, makes the loop's wait end when the deadline passes instead:

- Linux: a `timerfd` on CLOCK_MONOTONIC, armed with an absolute deadline (`os.timerfd_create` on
  Python 3.13 and later; the C library's `timerfd_create` through ctypes before that).
- macOS: a kqueue of its own with one EVFILT_TIMER event in nanoseconds (NOTE_CRITICAL: no timer
  coalescing), whose descriptor the loop reads.
- elsewhere: none (`open_timer` returns None; the caller waits on the loop's timer).

Deadlines are `time.perf_counter()` readings. On Linux that clock is CLOCK_MONOTONIC, the timer's
own clock; should it ever be another, each deadline is carried over through the current readings
of both. A timer belongs to one owner at a time: `sleep_until` is not re-entrant.
"""

from __future__ import annotations

import asyncio
import ctypes
import functools
import math
import os
import select
import sys
import time
import weakref
from typing import Any, Protocol

__all__ = ["KernelTimer", "TimerUnavailable", "open_timer"]


class TimerUnavailable(OSError):
    """This platform or process cannot give a high-resolution timer (the reason is the message)."""


class _Source(Protocol):
    """One platform's timer: a descriptor that becomes readable when the armed deadline passes."""

    kind: str
    fd: int

    def arm(self, deadline: float) -> None: ...

    def drain(self) -> bool:
        """Consume the expiry; False if there was none (a wake-up left over from an earlier arming)."""
        ...

    def close(self) -> None: ...


# -- Linux: timerfd -------------------------------------------------------------------------
_TFD_TIMER_ABSTIME = 1
_SAME_CLOCK = time.get_clock_info("perf_counter").implementation == "clock_gettime(CLOCK_MONOTONIC)"


def _monotonic_ns(deadline: float) -> int:
    """A perf_counter deadline on CLOCK_MONOTONIC, in whole nanoseconds, rounded up (never early)."""
    if not _SAME_CLOCK:
        deadline += time.clock_gettime(time.CLOCK_MONOTONIC) - time.perf_counter()
    return max(1, math.ceil(deadline * 1e9))  # 0 would disarm the timer


class _Timespec(ctypes.Structure):
    _fields_ = [("tv_sec", ctypes.c_long), ("tv_nsec", ctypes.c_long)]


class _Itimerspec(ctypes.Structure):
    _fields_ = [("it_interval", _Timespec), ("it_value", _Timespec)]


@functools.cache
def _libc_timerfd() -> tuple[Any, Any]:
    """libc's timerfd_create and timerfd_settime, typed, or TimerUnavailable."""
    try:
        libc = ctypes.CDLL(None, use_errno=True)  # the symbols the interpreter is linked with: libc's
        create, settime = libc.timerfd_create, libc.timerfd_settime
    except (OSError, AttributeError) as exc:
        raise TimerUnavailable(f"no timerfd in the C library ({exc})") from None
    create.argtypes, create.restype = [ctypes.c_int, ctypes.c_int], ctypes.c_int
    settime.argtypes = [ctypes.c_int, ctypes.c_int, ctypes.POINTER(_Itimerspec), ctypes.c_void_p]
    settime.restype = ctypes.c_int
    return create, settime


class _TimerFd:
    """A Linux timerfd on CLOCK_MONOTONIC, non-blocking, armed with absolute deadlines."""

    kind = "timerfd"

    def __init__(self) -> None:
        if sys.version_info >= (3, 13):
            self.fd = os.timerfd_create(time.CLOCK_MONOTONIC, flags=os.TFD_NONBLOCK | os.TFD_CLOEXEC)
            return
        create, self._settime = _libc_timerfd()
        # TFD_NONBLOCK and TFD_CLOEXEC are defined as O_NONBLOCK and O_CLOEXEC on every architecture.
        fd = create(time.CLOCK_MONOTONIC, os.O_NONBLOCK | os.O_CLOEXEC)
        if fd < 0:
            err = ctypes.get_errno()
            raise OSError(err, f"timerfd_create: {os.strerror(err)}")
        self.fd = fd
        self._spec = _Itimerspec()  # reused: one arming is one call and no allocation

    def arm(self, deadline: float) -> None:
        ns = _monotonic_ns(deadline)
        if sys.version_info >= (3, 13):
            os.timerfd_settime_ns(self.fd, flags=os.TFD_TIMER_ABSTIME, initial=ns)
            return
        self._spec.it_value.tv_sec, self._spec.it_value.tv_nsec = divmod(ns, 1_000_000_000)
        if self._settime(self.fd, _TFD_TIMER_ABSTIME, ctypes.byref(self._spec), None) != 0:
            err = ctypes.get_errno()
            raise OSError(err, f"timerfd_settime: {os.strerror(err)}")

    def drain(self) -> bool:
        try:
            os.read(self.fd, 8)  # the number of expiries; arming again resets it
        except BlockingIOError:
            return False
        return True

    def close(self) -> None:
        os.close(self.fd)


# -- macOS: a kqueue timer ------------------------------------------------------------------
_NOTE_NSECONDS = 0x4  # <sys/event.h> on Darwin; the BSDs number these flags differently
_NOTE_CRITICAL = 0x20


class _KqueueTimer:
    """A kqueue holding one one-shot EVFILT_TIMER event, in nanoseconds from now."""

    kind = "kqueue"

    def __init__(self) -> None:
        if sys.platform != "darwin":
            raise TimerUnavailable("kqueue timers are implemented for macOS only")
        self._kq: Any = select.kqueue()
        self.fd: int = self._kq.fileno()

    def arm(self, deadline: float) -> None:
        if sys.platform == "darwin":
            ns = max(1, math.ceil((deadline - time.perf_counter()) * 1e9))
            event = select.kevent(
                1,
                filter=select.KQ_FILTER_TIMER,
                flags=select.KQ_EV_ADD | select.KQ_EV_ONESHOT,
                fflags=_NOTE_NSECONDS | _NOTE_CRITICAL,
                data=ns,
            )
            self._kq.control([event], 0, 0)  # the same ident replaces the previous arming

    def drain(self) -> bool:
        return bool(self._kq.control(None, 1, 0))

    def close(self) -> None:
        self._kq.close()


def _platform_source() -> type[_TimerFd | _KqueueTimer] | None:
    if sys.platform.startswith("linux"):
        return _TimerFd
    if sys.platform == "darwin" and hasattr(select, "kqueue"):
        return _KqueueTimer
    return None


def _open_source() -> _Source:
    source = _platform_source()
    if source is None:
        raise TimerUnavailable(f"no high-resolution timer is implemented for {sys.platform}")
    return source()


class KernelTimer:
    """One high-resolution timer that a coroutine on the event loop can sleep on.

    The descriptor is registered with the running loop at the first wait (and again if the loop
    changes), re-armed for each deadline, and closed by `close()`, or when the timer is collected.
    """

    def __init__(self) -> None:
        self._source = _open_source()
        self.kind = self._source.kind
        self._loop: asyncio.AbstractEventLoop | None = None
        self._waiter: asyncio.Future[None] | None = None
        self._closer = weakref.finalize(self, self._source.close)

    @property
    def closed(self) -> bool:
        return not self._closer.alive

    async def sleep_until(self, deadline: float) -> None:
        """Return at `deadline` (a perf_counter reading) or just after; never before it."""
        loop = asyncio.get_running_loop()
        if self._loop is not loop:
            self._attach(loop)
        while time.perf_counter() < deadline:
            self._source.arm(deadline)
            self._waiter = loop.create_future()
            try:
                await self._waiter
            finally:
                self._waiter = None

    def _attach(self, loop: asyncio.AbstractEventLoop) -> None:
        self._detach()
        loop.add_reader(self._source.fd, self._on_readable)
        self._loop = loop

    def _detach(self) -> None:
        if self._loop is not None and not self._loop.is_closed():
            self._loop.remove_reader(self._source.fd)
        self._loop = None

    def _on_readable(self) -> None:
        if self._source.drain() and self._waiter is not None and not self._waiter.done():
            self._waiter.set_result(None)

    def close(self) -> None:
        """Stop reading the descriptor and close it (call on the loop that reads it)."""
        if self._closer.alive:
            self._detach()
            self._closer()


def open_timer() -> KernelTimer | None:
    """A new high-resolution timer; None on a platform that has none here. Raises (OSError,
    TimerUnavailable) when the platform has one and setting it up failed."""
    if _platform_source() is None:
        return None
    return KernelTimer()
