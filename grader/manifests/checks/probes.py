"""readiness-probe and startup-probe: traffic waits for the model, and loading it is not fatal.

Without a readiness probe the Service sends requests to a pod that is still loading weights.
Without a startup probe long enough for loading (about ten minutes for a 7-8B model pulled
from the Hub), a liveness probe restarts the container mid-load, forever. Both probes must
reach the server: an HTTP GET on a path vLLM answers, on the port it listens on.
"""

from __future__ import annotations

from typing import Any

from ..results import Finding
from ..shape import as_dict, dicts
from ..workload import ServingContainer
from .base import ChecklistItem, ManifestSet, no_server, server_finding

__all__ = ["MIN_STARTUP_SECONDS", "READINESS", "STARTUP"]

#: The startup budget a weights download plus load needs (the chart's default: 10 s x 60).
MIN_STARTUP_SECONDS = 600
#: vLLM's GET endpoints that answer 200 once the server is up (the fake server has them too).
_OK_PATHS = ("/health", "/v1/models", "/ping", "/version", "/metrics")
_DEFAULT_PORT = 8000


def _server_port(server: ServingContainer) -> int:
    occurrences = server.flag("--port")
    value = occurrences[-1].value if occurrences else None
    return int(value) if value and value.isdigit() else _DEFAULT_PORT


def _target_problem(server: ServingContainer, key: str, probe: dict[str, Any]) -> Finding | None:
    """Why the probe cannot reach the server, or None when it can."""
    if "grpc" in probe:
        return server_finding(
            server, False, f"{key} uses gRPC, which vLLM does not serve", (key, "grpc"), f"use {key}.httpGet on /health"
        )
    if "exec" in probe:
        return None
    handler = "httpGet" if "httpGet" in probe else "tcpSocket" if "tcpSocket" in probe else None
    if handler is None:
        return server_finding(
            server,
            False,
            f"{key} has no handler (httpGet, tcpSocket or exec)",
            (key,),
            f"give {key} an httpGet on /health",
        )
    action = as_dict(probe[handler])
    port, listening = action.get("port"), _server_port(server)
    declared = {
        str(p.get("name")): p.get("containerPort") for p in dicts(server.container.get("ports")) if p.get("name")
    }
    if isinstance(port, str) and not port.isdigit():
        if port not in declared:
            return server_finding(
                server,
                False,
                f"{key} targets port '{port}', which no container port is named",
                (key, handler, "port"),
                f"name the container port '{port}' or probe {listening}",
            )
        number = declared[port]
    else:
        number = int(port) if isinstance(port, int) or (isinstance(port, str) and port.isdigit()) else None
    if number != listening:
        return server_finding(
            server,
            False,
            f"{key} targets port {number} but the server listens on {listening}",
            (key, handler, "port"),
            f"probe port {listening}",
        )
    path = str(action.get("path") or "/")
    if handler == "httpGet" and path.split("?", maxsplit=1)[0] not in _OK_PATHS:
        return server_finding(
            server,
            False,
            f"{key} requests GET {path}, which vLLM answers with 404",
            (key, handler, "path"),
            f"probe {_OK_PATHS[0]}",
        )
    return None


def _describe(server: ServingContainer, probe: dict[str, Any]) -> str:
    if "httpGet" in probe:
        action = as_dict(probe["httpGet"])
        port = action.get("port")
        shown = f"{port} ({_server_port(server)})" if isinstance(port, str) and not port.isdigit() else str(port)
        return f"GET {action.get('path', '/')} on port {shown}"
    return "tcpSocket" if "tcpSocket" in probe else "exec"


def _readiness(server: ServingContainer) -> Finding:
    probe = server.container.get("readinessProbe")
    if not isinstance(probe, dict):
        return server_finding(
            server,
            False,
            "no readinessProbe: the Service sends requests to the pod while the model is still loading",
            (),
            "add readinessProbe.httpGet on /health",
        )
    return _target_problem(server, "readinessProbe", probe) or server_finding(
        server, True, _describe(server, probe), ("readinessProbe",)
    )


def _budget(probe: dict[str, Any]) -> int:
    """Seconds before the kubelet gives up: initialDelaySeconds + periodSeconds x failureThreshold."""

    def num(key: str, default: int) -> int:
        value = probe.get(key)
        return value if isinstance(value, int) and not isinstance(value, bool) else default

    return num("initialDelaySeconds", 0) + num("periodSeconds", 10) * num("failureThreshold", 3)


def _startup(server: ServingContainer) -> Finding:
    probe = server.container.get("startupProbe")
    if not isinstance(probe, dict):
        after = (
            "the livenessProbe restarts the container while the weights load"
            if "livenessProbe" in server.container
            else "nothing states how long loading the weights may take"
        )
        return server_finding(
            server,
            False,
            f"no startupProbe: {after}",
            (),
            f"add startupProbe.httpGet on /health with periodSeconds x failureThreshold >= "
            f"{MIN_STARTUP_SECONDS} (e.g. 10 x 60)",
        )
    problem = _target_problem(server, "startupProbe", probe)
    if problem:
        return problem
    budget = _budget(probe)
    if budget < MIN_STARTUP_SECONDS:
        period = probe.get("periodSeconds", 10) if isinstance(probe.get("periodSeconds"), int) else 10
        needed = -(-(MIN_STARTUP_SECONDS - (probe.get("initialDelaySeconds") or 0)) // max(period, 1))
        return server_finding(
            server,
            False,
            f"startupProbe allows {budget} s (initialDelaySeconds + periodSeconds x "
            f"failureThreshold); loading weights needs about {MIN_STARTUP_SECONDS} s",
            ("startupProbe",),
            f"raise startupProbe.failureThreshold to {needed}",
        )
    return server_finding(server, True, f"{_describe(server, probe)}, allows {budget} s", ("startupProbe",))


def run_readiness(ctx: ManifestSet) -> list[Finding]:
    return [_readiness(s) for s in ctx.servers] or no_server()


def run_startup(ctx: ManifestSet) -> list[Finding]:
    return [_startup(s) for s in ctx.servers] or no_server()


READINESS = ChecklistItem("readiness-probe", "Readiness probe", run_readiness)
STARTUP = ChecklistItem("startup-probe", "Startup probe with a budget for loading weights", run_startup)
