"""Routing gateway. YOURS TO WRITE: this skeleton starts, answers /health, and routes nothing.

Contract (TASK.md, ../schemas/contract/gateway-config.schema.json, gateway-stats.schema.json):
    python gateway/gateway.py --config FILE --port N
"""

from __future__ import annotations

import argparse

import uvicorn
import yaml
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route


def build_app(config: dict) -> Starlette:
    async def health(request: Request) -> Response:
        return Response(status_code=200)

    async def chat(request: Request) -> Response:
        # TODO: local route first (health, context length), fallback rules, `require`, streaming, costs.
        body = {"error": {"message": "not implemented yet", "type": "NotImplemented", "param": None, "code": 501}}
        return JSONResponse(body, status_code=501, headers={"x-gateway-route": "none", "x-gateway-attempts": ""})

    async def stats(request: Request) -> Response:
        empty = {"n": 0, "p50": None, "p90": None, "p99": None, "max": None, "p99_is_max": True}
        route = {"requests": 0, "failures": 0, "fallbacks": 0, "latency_s": empty, "cost_usd": 0.0}
        return JSONResponse({"contract": 4, "routes": {"local": route, "api": dict(route)}})

    return Starlette(routes=[Route("/health", health), Route("/v1/chat/completions", chat, methods=["POST"]),
                             Route("/stats", stats)])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--config", required=True)
    parser.add_argument("--port", type=int, required=True)
    args = parser.parse_args()
    with open(args.config, encoding="utf-8") as f:
        config = yaml.safe_load(f)
    uvicorn.run(build_app(config), host="127.0.0.1", port=args.port, log_level="warning")


if __name__ == "__main__":
    main()
