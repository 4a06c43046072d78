"""`/admin/*`: change a running server (settings, faults, health), reset it, read its ledger.

Off unless the server was started with `--admin`; with `--admin-token`, every call needs
`Authorization: Bearer TOKEN`. Bodies are JSON; errors come back as OpenAI-style 4xx bodies.
"""

from __future__ import annotations

import asyncio
import hmac
import time
from typing import Any

from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from .protocol import BadRequest, parse_json
from .settings import SettingsError
from .state import ServerState
from .wire import error_body

__all__ = ["admin_routes"]


def _err(status: int, message: str) -> JSONResponse:
    return JSONResponse(error_body(status, message), status_code=status)


def _authorised(request: Request, state: ServerState) -> bool:
    token = state.settings.admin_token
    if not token:
        return True
    given = request.headers.get("authorization", "")
    return hmac.compare_digest(given.encode(), f"Bearer {token}".encode())


def _admin(handler: Any) -> Any:
    async def endpoint(request: Request) -> Response:
        state: ServerState = request.app.state.server
        if not _authorised(request, state):
            return _err(401, "The admin API needs 'Authorization: Bearer <admin token>'.")
        try:
            response: Response = await handler(request, state)
            return response
        except BadRequest as exc:
            return _err(exc.status, exc.message)
        except SettingsError as exc:
            return _err(400, str(exc))
    return endpoint


async def _body(request: Request) -> Any:
    raw = await request.body()
    return parse_json(raw) if raw.strip() else {}


async def get_config(request: Request, state: ServerState) -> Response:
    return JSONResponse(state.config())


async def patch_config(request: Request, state: ServerState) -> Response:
    """Body: settings to change, e.g. {"max_num_seqs": 2}; `?model=NAME` for one model only."""
    state.update_model(await _body(request), request.query_params.get("model"))
    return JSONResponse(state.config())


async def get_faults(request: Request, state: ServerState) -> Response:
    return JSONResponse({"faults": [rule.describe() for rule in state.faults.rules]})


async def put_faults(request: Request, state: ServerState) -> Response:
    """Body: {"faults": [rule, ...]} replaces every rule; [] clears them."""
    body = await _body(request)
    if not isinstance(body, dict) or "faults" not in body:
        raise BadRequest('Expected {"faults": [ ... ]}.')
    state.set_faults(body["faults"])
    return await get_faults(request, state)


async def post_fault(request: Request, state: ServerState) -> Response:
    """Body: one rule, appended after the existing ones."""
    state.add_fault(await _body(request))
    return await get_faults(request, state)


async def set_health(request: Request, state: ServerState) -> Response:
    body = await _body(request)
    if not isinstance(body.get("healthy"), bool):
        raise BadRequest('Expected {"healthy": true|false}.')
    state.healthy = body["healthy"]
    return JSONResponse({"healthy": state.health_ok()})


async def reset(request: Request, state: ServerState) -> Response:
    state.reset()
    return JSONResponse({"reset": True})


async def ledger(request: Request, state: ServerState) -> Response:
    """The current generation's finished records, oldest first; `?since=N` returns records with
    number > N; `?settle=S` first waits up to S seconds for the requests in flight to end;
    `?generation=G` reads an earlier generation (one per reset) instead."""
    since_raw = request.query_params.get("since", "0")
    settle_raw = request.query_params.get("settle", "0")
    gen_raw = request.query_params.get("generation")
    if not (since_raw.isascii() and since_raw.isdigit()):
        raise BadRequest("`since` must be a request number (a whole number >= 0).")
    if gen_raw is not None and not (gen_raw.isascii() and gen_raw.isdigit()):
        raise BadRequest("`generation` must be a whole number >= 0.")
    generation = None if gen_raw is None else int(gen_raw)
    try:
        settle = float(settle_raw)
    except ValueError:
        settle = -1.0
    if not 0 <= settle <= 60:
        raise BadRequest("`settle` must be a number of seconds between 0 and 60.")
    since = int(since_raw)
    deadline = time.monotonic() + settle
    while state.ledger.in_flight and time.monotonic() < deadline:
        await asyncio.sleep(0.005)
    records = [r.to_dict() for r in state.ledger.records(generation=generation) if r.number > since]
    return JSONResponse({"records": records, "generation": state.ledger.generation if generation is None else generation})


def admin_routes() -> list[Route]:
    return [
        Route("/admin/config", _admin(get_config), methods=["GET"]),
        Route("/admin/config", _admin(patch_config), methods=["PATCH", "POST"]),
        Route("/admin/faults", _admin(get_faults), methods=["GET"]),
        Route("/admin/faults", _admin(put_faults), methods=["PUT"]),
        Route("/admin/faults", _admin(post_fault), methods=["POST"]),
        Route("/admin/health", _admin(set_health), methods=["POST"]),
        Route("/admin/reset", _admin(reset), methods=["POST"]),
        Route("/admin/ledger", _admin(ledger), methods=["GET"]),
    ]
