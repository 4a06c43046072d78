"""memory-limit: the server has a memory limit, and its request does not exceed it.

Without a limit a leak or a burst of large requests grows until the node's OOM killer picks a
victim, which may be another pod on the GPU node. A request above the limit is rejected.
"""

from __future__ import annotations

from ..quantity import parse_quantity
from ..results import Finding
from ..shape import as_dict
from ..workload import ServingContainer
from .base import ChecklistItem, ManifestSet, no_server, server_finding

__all__ = ["CHECK"]


def _one(server: ServingContainer) -> Finding:
    resources = as_dict(server.container.get("resources"))
    limits, requests = as_dict(resources.get("limits")), as_dict(resources.get("requests"))
    if "memory" not in limits:
        return server_finding(
            server,
            False,
            "no memory limit: host memory use is unbounded and the node's OOM "
            "killer, not this pod's limit, decides what dies",
            ("resources", "limits"),
            "set resources.limits.memory (e.g. equal to the request)",
        )
    limit = parse_quantity(limits["memory"])
    if limit is None or limit <= 0:
        return server_finding(
            server,
            False,
            f"memory limit {limits['memory']!r} is not a positive quantity",
            ("resources", "limits", "memory"),
            "write it as a quantity such as 32Gi",
        )
    request = parse_quantity(requests.get("memory")) if "memory" in requests else None
    if request is not None and request > limit:
        return server_finding(
            server,
            False,
            f"memory request {requests['memory']} exceeds the limit {limits['memory']}",
            ("resources", "requests", "memory"),
            "lower the request to the limit or below",
        )
    shown = f" (request {requests['memory']})" if "memory" in requests else ""
    return server_finding(server, True, f"memory limit {limits['memory']}{shown}", ("resources", "limits", "memory"))


def run(ctx: ManifestSet) -> list[Finding]:
    return [_one(s) for s in ctx.servers] or no_server()


CHECK = ChecklistItem("memory-limit", "Memory limit", run)
