"""The routing policy: which routes a request may use, in what order, and what the client gets.

    1. `require` filters the plan before anything is sent: "local" -> [local], "any" -> [local, api].
    2. The local route is skipped, at no cost, when its health probe says it is down or the request
       does not fit its context; under `require: local` that ends the request (503 / 400).
    3. Each route in the plan is tried at most once, in order. A route's 4xx goes to the client as
       it is; a failure before the first byte moves on to the next route (a fallback); a failure
       after it ends the client's stream with an error. When no route is left: 503 under
       `require: local`, else 502 (504 when the last failure was a timeout).

Response headers: `x-gateway-route` (local|api|none: who produced the response) and
`x-gateway-attempts` (the routes tried, in order).
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from typing import Protocol

from chat import ChatRequest
from context import ContextCheck, PrecheckUnreachable
from health import HealthMonitor
from outcomes import Relay, Reply, RouteFailed, error_reply
from stats import Attempt, Stats

__all__ = ["Route", "Routed", "Router"]

log = logging.getLogger("gateway.router")


class Route(Protocol):
    name: str

    async def attempt(self, request: ChatRequest, record: Attempt) -> Reply | Relay: ...


@dataclass
class Routed:
    """The client's answer and the headers that say how it was reached."""

    answer: Reply | Relay
    route: str                                    # local | api | none
    attempts: list[str] = field(default_factory=list)

    @property
    def headers(self) -> dict[str, str]:
        return {"x-gateway-route": self.route, "x-gateway-attempts": ",".join(self.attempts)}


@dataclass
class _Trace:
    """What happened to one request so far: routes tried, why each was skipped or failed."""

    attempts: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    last_failure: RouteFailed | None = None


class Router:
    def __init__(self, local: Route, api: Route, health: HealthMonitor, context: ContextCheck, stats: Stats) -> None:
        self.local, self.api = local, api
        self.health, self.context, self.stats = health, context, stats

    async def route(self, request: ChatRequest) -> Routed:
        trace = _Trace()
        plan = [self.local] if request.require == "local" else [self.local, self.api]
        for route in plan:
            if route is self.local:
                refusal = await self._admit_local(request, trace)
                if refusal is not None:
                    if request.require == "local":
                        return Routed(refusal, "none", trace.attempts)
                    continue
            if trace.last_failure is not None:
                self.stats.fell_back(trace.attempts[-1])
                log.warning("falling back from %s to %s: %s", trace.attempts[-1], route.name, trace.last_failure)
            trace.attempts.append(route.name)
            try:
                answer = await route.attempt(request, self.stats.begin(route.name))
            except RouteFailed as failure:
                self._failed(route, failure, trace)
                continue
            return Routed(answer, route.name, trace.attempts)
        return Routed(self._no_route(request, trace), "none", trace.attempts)

    async def _admit_local(self, request: ChatRequest, trace: _Trace) -> Reply | None:
        """None when the local route may be tried; else the answer if nothing else may serve."""
        if not await self.health.healthy():
            trace.notes.append("local: skipped, its health probe says it is down")
            return error_reply(503, "The local route is unhealthy and this request requires it (require: local); "
                               "it was not sent anywhere else.", "service_unavailable", "local_route_unavailable")
        try:
            fit = await self.context.check(request.messages, request.max_tokens)
        except PrecheckUnreachable as exc:  # the server is down: this counts as the local attempt, failed
            trace.attempts.append(self.local.name)
            self.stats.begin(self.local.name).failed()
            self._failed(self.local, RouteFailed("connection", str(exc)), trace)
            return error_reply(503, f"The local route failed ({exc}) and this request requires it (require: local); "
                               "it was not sent anywhere else.", "service_unavailable", "local_route_failed")
        if fit.fits is False:
            trace.notes.append(f"local: skipped, {fit.explain()}")
            return error_reply(400, f"This request does not fit the local model: {fit.explain()}; it requires the "
                               "local route (require: local), so it was not sent anywhere else.",
                               "invalid_request_error", "context_length_exceeded", "messages")
        return None

    def _failed(self, route: Route, failure: RouteFailed, trace: _Trace) -> None:
        trace.last_failure = failure
        trace.notes.append(f"{route.name}: {failure.detail}")
        if route is self.local:
            self.health.probe_soon()  # is it down, or was it one bad request? the next request will know

    def _no_route(self, request: ChatRequest, trace: _Trace) -> Reply:
        what = "; ".join(trace.notes) or "no route was available"
        if request.require == "local":
            return error_reply(503, f"The local route failed and this request requires it (require: local); it was "
                               f"not sent anywhere else. {what}", "service_unavailable", "local_route_failed")
        timeout = trace.last_failure is not None and trace.last_failure.kind == "timeout"
        return error_reply(504 if timeout else 502, f"No route could answer: {what}", "gateway_error",
                           "upstream_timeout" if timeout else "upstream_failed")
