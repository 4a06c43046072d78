"""`/admin/*`: change a running server (settings, faults, health), reset it, read its ledger.

The HTTP face of `ServerControl` (control.py): each endpoint reads its body, calls one control
and writes its answer, so the admin API and an in-process `RunningServer` run the same code.

Off unless the server was started with `--admin`; with `--admin-token`, every call needs
`Authorization: Bearer TOKEN`. Bodies are JSON; errors come back as OpenAI-style 4xx bodies.
"""

from __future__ import annotations

import asyncio
import functools
import hmac
from collections.abc import Awaitable, Callable
from typing import Any

from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from fake_server.engine.state import LOGGED_ENDPOINTS
from fake_server.http.control import MAX_SETTLE, ServerControl
from fake_server.http.protocol import BadRequest, parse_json
from fake_server.http.wire import error_body
from fake_server.settings import SettingsError

__all__ = ["admin_routes"]


def _err(status: int, message: str) -> JSONResponse:
    return JSONResponse(error_body(status, message), status_code=status)


def _authorised(request: Request, control: ServerControl) -> bool:
    token = control.state.settings.admin_token
    if not token:
        return True
    given = request.headers.get("authorization", "")
    return hmac.compare_digest(given.encode(), f"Bearer {token}".encode())


_Handler = Callable[[Request, ServerControl], Awaitable[Response]]


def _admin(handler: _Handler, control: ServerControl) -> Callable[[Request], Awaitable[Response]]:
    async def endpoint(request: Request) -> Response:
        if not _authorised(request, control):
            return _err(401, "The admin API needs 'Authorization: Bearer <admin token>'.")
        try:
            return await handler(request, control)
        except BadRequest as exc:
            return _err(exc.status, exc.message)
        except SettingsError as exc:
            return _err(400, str(exc))

    return endpoint


async def _body(request: Request) -> Any:
    raw = await request.body()
    return parse_json(raw) if raw.strip() else {}


async def get_config(request: Request, control: ServerControl) -> Response:
    return JSONResponse(control.config())


async def patch_config(request: Request, control: ServerControl) -> Response:
    """Body: settings to change, e.g. {"max_num_seqs": 2}; `?model=NAME` for one model only."""
    return JSONResponse(control.configure(await _body(request), model=request.query_params.get("model")))


async def get_faults(request: Request, control: ServerControl) -> Response:
    return JSONResponse({"faults": control.faults()})


async def put_faults(request: Request, control: ServerControl) -> Response:
    """Body: {"faults": [rule, ...]} replaces every rule; [] clears them."""
    body = await _body(request)
    if not isinstance(body, dict) or "faults" not in body:
        raise BadRequest('Expected {"faults": [ ... ]}.')
    return JSONResponse({"faults": control.set_faults(body["faults"])})


async def post_fault(request: Request, control: ServerControl) -> Response:
    """Body: one rule, appended after the existing ones."""
    return JSONResponse({"faults": control.add_fault(await _body(request))})


async def set_health(request: Request, control: ServerControl) -> Response:
    body = await _body(request)
    if not isinstance(body, dict) or not isinstance(body.get("healthy"), bool):
        raise BadRequest('Expected {"healthy": true|false}.')
    return JSONResponse({"healthy": control.set_healthy(body["healthy"])})


async def reset(request: Request, control: ServerControl) -> Response:
    control.reset()
    return JSONResponse({"reset": True})


async def ledger(request: Request, control: ServerControl) -> Response:
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
    try:
        settle = float(settle_raw)
    except ValueError:
        settle = -1.0
    if not 0 <= settle <= MAX_SETTLE:
        raise BadRequest(f"`settle` must be a number of seconds between 0 and {MAX_SETTLE:g}.")
    generation = None if gen_raw is None else int(gen_raw)
    read = functools.partial(control.ledger, since=int(since_raw), settle=settle, generation=generation)
    # A wait for requests in flight blocks on the ledger's lock: in a worker thread, so the loop serves on.
    return JSONResponse(await asyncio.to_thread(read) if settle > 0 else read())


def _since(request: Request) -> float:
    try:
        return float(request.query_params.get("since", "0"))
    except ValueError:
        raise BadRequest("`since` must be a Unix time in seconds.") from None


async def health_checks(request: Request, control: ServerControl) -> Response:
    """The /health answers given so far, `?since=T` only those after Unix time T."""
    return JSONResponse({"health_checks": control.endpoint_calls("health", since=_since(request))})


async def endpoint_calls(request: Request, control: ServerControl) -> Response:
    """`/admin/calls/{endpoint}`: the /health or /tokenize answers given so far, `?since=T` only those after T."""
    endpoint = request.path_params["endpoint"]
    if endpoint not in LOGGED_ENDPOINTS:
        raise BadRequest(f"No call log for `{endpoint}`; there are logs for {', '.join(LOGGED_ENDPOINTS)}.", status=404)
    return JSONResponse({"calls": control.endpoint_calls(endpoint, since=_since(request))})


def admin_routes(control: ServerControl) -> list[Route]:
    return [
        Route("/admin/config", _admin(get_config, control), methods=["GET"]),
        Route("/admin/config", _admin(patch_config, control), methods=["PATCH", "POST"]),
        Route("/admin/faults", _admin(get_faults, control), methods=["GET"]),
        Route("/admin/faults", _admin(put_faults, control), methods=["PUT"]),
        Route("/admin/faults", _admin(post_fault, control), methods=["POST"]),
        Route("/admin/health", _admin(set_health, control), methods=["POST"]),
        Route("/admin/health-checks", _admin(health_checks, control), methods=["GET"]),
        Route("/admin/calls/{endpoint}", _admin(endpoint_calls, control), methods=["GET"]),
        Route("/admin/reset", _admin(reset, control), methods=["POST"]),
        Route("/admin/ledger", _admin(ledger, control), methods=["GET"]),
    ]
