"""gpu-request: the server asks for its GPUs, as a limit and an equal request.

Kubernetes schedules extended resources (GPUs) by their limit and requires any request to
equal it; a request without a limit is rejected. The GPU count must also cover the model's
parallelism: `--tensor-parallel-size 2` on a one-GPU pod fails at startup.
"""

from __future__ import annotations

import re
from typing import Any

from ..results import Finding
from ..shape import as_dict
from ..workload import ServingContainer
from .base import ChecklistItem, ManifestSet, no_server, server_finding

__all__ = ["CHECK"]

_GPU = re.compile(r"^(nvidia\.com/(gpu|mig-[\w.-]+)|amd\.com/gpu|gpu\.intel\.com/[\w.-]+)$")


def _count(value: Any) -> int | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    return int(value) if isinstance(value, str) and value.strip().isdigit() else None


def _parallelism(server: ServingContainer) -> tuple[int, list[str]]:
    """GPUs the command line needs (tensor x pipeline parallel), and the flags that say so."""
    need, said = 1, []
    for names in (("--tensor-parallel-size", "-tp"), ("--pipeline-parallel-size", "-pp")):
        occurrences = server.flag(*names)
        if occurrences and occurrences[-1].value and occurrences[-1].value.isdigit():
            need *= int(occurrences[-1].value)
            said.append(f"{names[0]} {occurrences[-1].value}")
    return need, said


def _one(server: ServingContainer) -> Finding:
    resources = as_dict(server.container.get("resources"))
    limits, requests = as_dict(resources.get("limits")), as_dict(resources.get("requests"))
    names = sorted(k for k in {*limits, *requests} if _GPU.match(str(k)))
    if not names:
        return server_finding(
            server,
            False,
            "no GPU in resources: the pod can land on a node without one, and vLLM then fails to start",
            ("resources", "limits"),
            'set resources.limits["nvidia.com/gpu"]: 1 and the same request',
        )
    name = names[0]
    if name not in limits:
        return server_finding(
            server,
            False,
            f"{name} is requested but not limited; Kubernetes rejects an extended resource without a limit",
            ("resources", "limits"),
            f'set resources.limits["{name}"] equal to the request',
        )
    limit = _count(limits[name])
    if limit is None or limit < 1:
        return server_finding(
            server,
            False,
            f"{name} limit {limits[name]!r} is not a whole number of GPUs",
            ("resources", "limits", name),
            f'set resources.limits["{name}"] to 1 or more',
        )
    if name in requests and _count(requests[name]) != limit:
        return server_finding(
            server,
            False,
            f"{name} request {requests[name]!r} differs from the limit {limit}; Kubernetes requires them equal",
            ("resources", "requests", name),
            f'set resources.requests["{name}"] to {limit}, or drop it (it defaults to the limit)',
        )
    need, said = _parallelism(server)
    if need > limit:
        return server_finding(
            server,
            False,
            f"{' x '.join(said)} needs {need} GPUs but the pod has {limit}",
            ("resources", "limits", name),
            f'set resources.limits["{name}"] to {need}, or lower the parallelism',
        )
    note = f"; {' x '.join(said)} uses {need} of them" if need < limit and said else ""
    request_note = "request equal" if name in requests else "request defaults to the limit"
    return server_finding(server, True, f"{limit} x {name} limit ({request_note}){note}", ("resources", "limits", name))


def run(ctx: ManifestSet) -> list[Finding]:
    return [_one(s) for s in ctx.servers] or no_server()


CHECK = ChecklistItem("gpu-request", "GPU request and limit", run)
