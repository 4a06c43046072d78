"""The reference routing gateway: a local route first, the API route as the fallback.

    python gateway/gateway.py --config gateway.yaml --port 8080

Serves on 127.0.0.1:PORT (0 picks a free port) and prints `gateway: listening on URL` once it
accepts connections. A config it cannot run with stops it before it starts, with one line
naming the field, and exit status 2. The API route needs the kit's `starter/` on PYTHONPATH
(for `api_client`), as the grader runs every submission.
"""

from __future__ import annotations

import argparse
import logging
import socket
import sys

from config import ConfigError, GatewayConfig, load_config

__all__ = ["main"]

EXIT_CONFIG = 2  # the same status argparse uses for bad arguments: "you called me wrongly"


def _port(text: str) -> int:
    try:
        port = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a port number: {text!r}") from None
    if not 0 <= port <= 65535:
        raise argparse.ArgumentTypeError(f"a port is 0-65535 (got {port})")
    return port


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="gateway", description="Route chat completions to a local model, "
                                     "falling back to an API (contract 4).")
    parser.add_argument("--config", required=True, help="the gateway config (YAML)")
    parser.add_argument("--port", required=True, type=_port, help="port on 127.0.0.1 (0: any free port)")
    return parser


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    logging.basicConfig(level=logging.WARNING, format="gateway: %(levelname)s %(name)s: %(message)s", stream=sys.stderr)
    try:
        config = load_config(args.config)
    except ConfigError as exc:
        print(f"gateway: config error: {exc}", file=sys.stderr)
        return EXIT_CONFIG
    try:
        import api_client  # noqa: F401 - checked here to fail with a clear message, not a traceback
    except ModuleNotFoundError as exc:
        if exc.name != "api_client":
            raise
        print("gateway: cannot import api_client: put the kit's starter/ folder on PYTHONPATH", file=sys.stderr)
        return EXIT_CONFIG
    return _serve(config, args.port)


def _serve(config: GatewayConfig, port: int) -> int:
    """Run until stopped. The server stack is imported only now, so a bad config fails in milliseconds."""
    import uvicorn

    from app import create_app

    class Server(uvicorn.Server):
        async def startup(self, sockets: list[socket.socket] | None = None) -> None:
            await super().startup(sockets)
            if self.started:
                bound = self.servers[0].sockets[0].getsockname()[1]
                print(f"gateway: listening on http://127.0.0.1:{bound}", flush=True)

    app = create_app(config)
    server = Server(uvicorn.Config(app, host="127.0.0.1", port=port, loop="asyncio", lifespan="on",
                                   log_level="warning", access_log=False, timeout_graceful_shutdown=2))
    server.run()
    return 0 if server.started else 1


if __name__ == "__main__":
    sys.exit(main())
