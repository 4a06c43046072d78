"""Is the local route up? A background probe of its health URL, re-run at once after a failure.

Freshness rule: the loop lands a result at least every period plus one probe timeout, so a
result is trusted for two periods plus one probe timeout. An older result means the loop is
stuck; then the answer is not "healthy" but "unknown", and the caller waits for a fresh probe
(bounded by the probe timeout) instead of sending requests to a server nobody has checked.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Awaitable, Callable
from typing import Any

import httpx

__all__ = ["HealthMonitor", "http_probe"]

log = logging.getLogger("gateway.health")

async def http_probe(client: httpx.AsyncClient, url: str, timeout_s: float) -> bool:
    """True when the health URL answers 200 within `timeout_s`; anything else (503, refused, slow) is unhealthy."""
    try:
        async with asyncio.timeout(timeout_s):
            response = await client.get(url)
    except (httpx.HTTPError, TimeoutError):
        return False
    return response.status_code == 200


class HealthMonitor:
    def __init__(self, probe: Callable[[], Awaitable[bool]], interval_s: float, probe_timeout_s: float,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self._probe = probe  # must return within probe_timeout_s (http_probe does)
        self.interval_s = interval_s
        self.fresh_for_s = 2 * interval_s + probe_timeout_s
        self._clock = clock
        self._healthy: bool | None = None
        self._checked_at: float | None = None
        self._inflight: asyncio.Task[bool] | None = None
        self._loop_task: asyncio.Task[None] | None = None

    async def start(self) -> None:
        """Probe once (so the first request has an answer), then keep probing in the background."""
        await self.probe_now()
        self._loop_task = asyncio.create_task(self._run(), name="local-health-probe")

    async def stop(self) -> None:
        for task in (self._loop_task, self._inflight):
            if task is not None:
                task.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await task

    def fresh(self) -> bool | None:
        """The last result if it is fresh, else None (unknown)."""
        if self._checked_at is None or self._clock() - self._checked_at > self.fresh_for_s:
            return None
        return self._healthy

    async def healthy(self) -> bool:
        """The local route's health, probing first when the last result is stale."""
        known = self.fresh()
        return known if known is not None else await self.probe_now()

    def probe_soon(self) -> None:
        """After a failed attempt: check now rather than at the next period, so the next request knows."""
        self._shared_probe()

    async def probe_now(self) -> bool:
        return await asyncio.shield(self._shared_probe())

    def _shared_probe(self) -> asyncio.Task[bool]:
        """One probe at a time; everyone who asks meanwhile gets its result."""
        if self._inflight is None or self._inflight.done():
            self._inflight = asyncio.create_task(self._probe_once(), name="local-health-check")
        return self._inflight

    async def _probe_once(self) -> bool:
        try:
            healthy = await self._probe()
        except Exception:  # a bug in the probe must not stop probing; fail closed and say so
            log.exception("health probe raised; counting the local route as unhealthy")
            healthy = False
        if healthy != self._healthy and (self._healthy is not None or not healthy):
            log.warning("local route is now %s", "healthy" if healthy else "UNHEALTHY")
        self._healthy, self._checked_at = healthy, self._clock()
        return healthy

    async def _run(self) -> None:
        while True:
            await asyncio.sleep(self.interval_s)
            await self.probe_now()

    def snapshot(self) -> dict[str, Any]:
        age = None if self._checked_at is None else round(self._clock() - self._checked_at, 3)
        return {"healthy": self.fresh(), "last_result": self._healthy, "age_s": age, "fresh_for_s": self.fresh_for_s}
