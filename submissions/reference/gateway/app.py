"""The gateway's HTTP surface (Starlette): `POST /v1/chat/completions`, `GET /stats`, `GET /health`.

Built from a checked config by `create_app`; the lifespan owns the upstream clients and the
health probe, so nothing runs at import time.
"""

from __future__ import annotations

import contextlib
import json
import logging
from collections.abc import AsyncIterator
from typing import Any

import httpx
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.routing import Route
from starlette.types import Receive, Scope, Send

from api_route import ApiRoute, make_client
from chat import BadRequest, parse_chat_request
from config import GatewayConfig
from context import ContextCheck
from health import HealthMonitor, http_probe
from local_route import LocalRoute
from outcomes import Relay, Reply, error_body
from router import Routed, Router
from stats import Stats

__all__ = ["create_app"]

log = logging.getLogger("gateway")

# Enough connections that a burst never queues inside the gateway, where the wait would look like the route's
# latency; few kept alive, because httpcore 1.0's pool does work quadratic in its idle connections on every request
# (measured: 64 concurrent streams waited ~450 ms to be sent with 64 idle connections, ~70-250 ms with 8).
_LIMITS = httpx.Limits(max_connections=1024, max_keepalive_connections=8)


class RelayResponse(StreamingResponse):
    """A stream that closes its source when the response ends for any reason, so a client that
    leaves mid-stream also releases the upstream connection at once (Starlette does not close it)."""

    def __init__(self, events: AsyncIterator[bytes], headers: dict[str, str]) -> None:
        super().__init__(events, media_type="text/event-stream", headers={"cache-control": "no-cache", **headers})
        self._events = events

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        try:
            await super().__call__(scope, receive, send)
        finally:
            aclose = getattr(self._events, "aclose", None)
            if aclose is not None:
                await aclose()


def _response(routed: Routed) -> Response:
    answer = routed.answer
    if isinstance(answer, Relay):
        return RelayResponse(answer.events, routed.headers)
    assert isinstance(answer, Reply)
    return Response(answer.body, status_code=answer.status, media_type=answer.media_type,
                    headers={**answer.headers, **routed.headers})


async def chat_completions(request: Request) -> Response:
    router: Router = request.app.state.router
    try:
        chat = parse_chat_request(await request.body())
    except BadRequest as exc:
        return JSONResponse(error_body(exc.message, "invalid_request_error", 400, exc.param), status_code=400,
                            headers={"x-gateway-route": "none", "x-gateway-attempts": ""})
    return _response(await router.route(chat))


async def stats(request: Request) -> Response:
    return JSONResponse(request.app.state.stats.to_dict())


async def health(request: Request) -> Response:
    monitor: HealthMonitor = request.app.state.health
    return JSONResponse({"status": "ok", "local": monitor.snapshot()})


def create_app(config: GatewayConfig) -> Starlette:
    @contextlib.asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        t = config.local.timeouts
        local_http = httpx.AsyncClient(timeout=httpx.Timeout(t.total_s, connect=t.connect_s), limits=_LIMITS,
                                       trust_env=False)  # loopback/cluster traffic must never go through a proxy
        api_client = make_client(config.api)
        monitor = HealthMonitor(lambda: http_probe(local_http, config.local.health_url, t.first_byte_s),
                                config.local.health_interval_s, probe_timeout_s=t.first_byte_s)
        context = ContextCheck(local_http, config.local)
        stats_ = Stats()
        app.state.stats, app.state.health = stats_, monitor
        app.state.router = Router(LocalRoute(config.local, local_http), ApiRoute(config.api, api_client),
                                  monitor, context, stats_)
        await monitor.start()
        await context.load_limit()
        log.info("local route %s is %s; max_model_len %s", config.local.base_url,
                 "healthy" if monitor.fresh() else "unhealthy", context.max_model_len)
        try:
            yield
        finally:
            await monitor.stop()
            await api_client.aclose()
            await local_http.aclose()

    async def server_error(request: Request, exc: Exception) -> Response:
        log.exception("unexpected error", exc_info=exc)
        body: dict[str, Any] = error_body(f"The gateway failed: {type(exc).__name__}: {exc}", "gateway_error", 500)
        return Response(json.dumps(body), status_code=500, media_type="application/json",
                        headers={"x-gateway-route": "none", "x-gateway-attempts": ""})

    return Starlette(routes=[Route("/v1/chat/completions", chat_completions, methods=["POST"]),
                             Route("/stats", stats, methods=["GET"]),
                             Route("/health", health, methods=["GET"])],
                     lifespan=lifespan, exception_handlers={500: server_error})
