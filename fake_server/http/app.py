"""The Starlette application of one fake server: vLLM's endpoints plus `/admin/*` when enabled."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import AsyncIterator
from typing import Any

from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from fake_server import tokenizer
from fake_server.engine.metrics import make_registry, render
from fake_server.engine.state import ServerState
from fake_server.http.admin import admin_routes
from fake_server.http.control import ServerControl
from fake_server.http.generation import Persona, chat_completions, completions, error_response
from fake_server.http.openapi import openapi_json
from fake_server.http.protocol import BadRequest, parse_chat, parse_json

__all__ = ["create_app"]

VERSION = "0.11.0-fake"


async def health(request: Request) -> Response:
    state: ServerState = request.app.state.server
    if stall := state.faults.health_stall:
        await asyncio.sleep(stall)
    status = 200 if state.health_ok() else 503
    state.endpoint_calls["health"].append((time.time(), status))
    return Response(status_code=status)


async def models(request: Request) -> Response:
    state: ServerState = request.app.state.server
    data = [
        {
            "id": name,
            "object": "model",
            "created": state.started_at,
            "owned_by": "vllm",
            "root": name,
            "parent": None,
            "max_model_len": engine.settings.max_model_len,
            "permission": [_permission(state, name)],
        }
        for name, engine in state.engines.items()
    ]
    pricing = getattr(request.app.state.persona, "pricing", None)
    if pricing is not None:
        for entry in data:
            entry["pricing"] = pricing()
    return JSONResponse({"object": "list", "data": data})


def _permission(state: ServerState, name: str) -> dict[str, Any]:
    """vLLM's default ModelPermission entry."""
    return {
        "id": f"modelperm-{abs(hash((state.settings.seed, name))) % 16**32:032x}",
        "object": "model_permission",
        "created": state.started_at,
        "allow_create_engine": False,
        "allow_sampling": True,
        "allow_logprobs": True,
        "allow_search_indices": False,
        "allow_view": True,
        "allow_fine_tuning": False,
        "organization": "*",
        "group": None,
        "is_blocking": False,
    }


async def tokenize(request: Request) -> Response:
    state: ServerState = request.app.state.server
    response = await _tokenize(request, state)
    state.endpoint_calls["tokenize"].append((time.time(), response.status_code))
    return response


async def _tokenize(request: Request, state: ServerState) -> Response:
    if (fault := state.faults.tokenize_error) is not None:
        return error_response(fault.status, fault.message or f"tokenize failed (injected fault, {fault.status})")
    try:
        data = parse_json(await request.body())
        model = data.get("model") or state.default_model
        if not isinstance(model, str):
            raise BadRequest("`model` must be a string.", "model")
        engine = state.engines.get(model)
        if engine is None:
            return error_response(404, f"The model `{model}` does not exist.", "model")
        if "messages" in data:
            text = tokenizer.render_chat(
                parse_chat({"messages": data["messages"]}).messages or [], engine.settings.default_system_prompt
            )
        elif isinstance(data.get("prompt"), str):
            text = data["prompt"]
        else:
            raise BadRequest("`prompt` (a string) or `messages` is required.", "prompt")
    except BadRequest as exc:
        return error_response(exc.status, exc.message, exc.param)
    pieces = tokenizer.tokenize(text)
    body: dict[str, Any] = {
        "count": len(pieces),
        "max_model_len": engine.settings.max_model_len,
        "tokens": tokenizer.token_ids(pieces),
        "token_strs": None,
    }
    if data.get("return_token_strs") is True:
        body["token_strs"] = pieces
    return JSONResponse(body)


async def version(request: Request) -> Response:
    return JSONResponse({"version": VERSION})


async def metrics(request: Request) -> Response:
    return Response(render(request.app.state.registry), media_type="text/plain; version=0.0.4; charset=utf-8")


async def _http_error(request: Request, exc: Exception) -> Response:
    assert isinstance(exc, HTTPException)
    if exc.status_code == 404:
        hint = ""
        if request.url.path.startswith("/admin/") and not request.app.state.server.settings.admin:
            hint = " (/admin/* is off: start the server with --admin, or `admin: true` in its scenario or fleet entry)"
        return error_response(404, f"Not found: {request.method} {request.url.path}{hint}")
    if exc.status_code == 405:
        return error_response(405, f"Method {request.method} is not allowed on {request.url.path}")
    return error_response(exc.status_code, str(exc.detail))


class _DropIntentionalCut(logging.Filter):
    """A `cut` fault ends a response early on purpose; uvicorn would log that as an error."""

    def filter(self, record: logging.LogRecord) -> bool:
        return "returned without completing response" not in record.getMessage()


class _GenerationFastPath:
    """Send generation requests straight to their handlers, around Starlette's middleware.

    Every streamed chunk otherwise passes through two middleware `send` wrappers; at a thousand
    streams that is a measurable share of each step's burst (bench/README.md). Everything else,
    including lifespan, goes to the Starlette app.
    """

    def __init__(self, app: Starlette) -> None:
        self.app = app
        self.state = app.state
        self.routes = {"/v1/chat/completions": chat_completions, "/v1/completions": completions}

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        handler = (
            self.routes.get(scope.get("path", "")) if scope["type"] == "http" and scope["method"] == "POST" else None
        )
        if handler is None:
            await self.app(scope, receive, send)
            return
        scope["app"] = self.app
        response = await handler(Request(scope, receive))
        await response(scope, receive, send)


def create_app(control: ServerControl, persona: Persona | None = None) -> _GenerationFastPath:
    """The app serving `control.state`; `/admin/*` drives that same control when the settings enable it."""
    state = control.state

    @contextlib.asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        state.start()
        try:
            yield
        finally:
            await state.stop()

    routes = [
        Route("/health", health, methods=["GET"]),
        Route("/v1/models", models, methods=["GET"]),
        Route("/tokenize", tokenize, methods=["POST"]),
        Route("/version", version, methods=["GET"]),
        Route("/metrics", metrics, methods=["GET"]),
        Route("/openapi.json", openapi_json, methods=["GET"]),
        Route("/v1/chat/completions", chat_completions, methods=["POST"]),
        Route("/v1/completions", completions, methods=["POST"]),
    ]
    if state.settings.admin:
        routes += admin_routes(control)
    app = Starlette(routes=routes, lifespan=lifespan, exception_handlers={HTTPException: _http_error})
    app.state.server = state
    app.state.persona = persona
    state.persona = persona
    app.state.registry = make_registry(state.named_engines)
    uvicorn_log = logging.getLogger("uvicorn.error")
    if not any(isinstance(f, _DropIntentionalCut) for f in uvicorn_log.filters):  # once per process, not per server
        uvicorn_log.addFilter(_DropIntentionalCut())
    return _GenerationFastPath(app)
