"""model-volume: the weights live on a PersistentVolumeClaim mounted where the server reads them.

The path the server reads weights from is, in order: an absolute model path (`vllm serve
/models/x`, `--model /models/x`), `--download-dir`, then the Hugging Face cache variables
(HF_HUB_CACHE, HUGGINGFACE_HUB_CACHE, TRANSFORMERS_CACHE, HF_HOME), then vLLM's default
cache `/root/.cache/huggingface`. That path must be under a mount of a PVC (a pod volume or a
StatefulSet volumeClaimTemplate); anything else downloads the weights again on every start.
"""

from __future__ import annotations

from typing import Any

from ..loader import PathKey
from ..results import Finding
from ..shape import as_dict, dicts
from ..workload import ServingContainer
from .base import ChecklistItem, ManifestSet, no_server, server_finding

__all__ = ["CHECK", "DEFAULT_HF_CACHE", "weights_path"]

DEFAULT_HF_CACHE = "/root/.cache/huggingface"
_CACHE_ENV = ("HF_HUB_CACHE", "HUGGINGFACE_HUB_CACHE", "TRANSFORMERS_CACHE", "HF_HOME")


def weights_path(server: ServingContainer) -> tuple[str, str, PathKey]:
    """(path, what sets it, field of the container that sets it)."""
    model = server.positional_model() or next(iter(server.flag("--model")[-1:]), None)
    if model and model.value and model.value.startswith("/"):
        return model.value, "the model path", model.path
    download = server.flag("--download-dir")
    if download and download[-1].value:
        return download[-1].value, "--download-dir", download[-1].path
    for name in _CACHE_ENV:
        found = server.env_value(name)
        if found:
            return found[1], name, ("env", found[0], "value")
    return DEFAULT_HF_CACHE, "vLLM's default Hugging Face cache (no --download-dir or HF_HOME)", ()


def _under(path: str, mount: str) -> bool:
    mount = mount.rstrip("/") or "/"
    return path == mount or path.startswith(mount if mount.endswith("/") else mount + "/")


def _volume_kind(volume: dict[str, Any]) -> str:
    kinds = [k for k in volume if k != "name"]
    return kinds[0] if kinds else "no source"


def _claim_templates(server: ServingContainer) -> set[str]:
    """Names of a StatefulSet's volumeClaimTemplates: each pod gets its own PVC under that name."""
    if server.doc.kind != "StatefulSet":
        return set()
    templates = dicts(as_dict(server.doc.data.get("spec")).get("volumeClaimTemplates"))
    return {str(as_dict(t.get("metadata")).get("name")) for t in templates}


def _one(server: ServingContainer, claims: set[str]) -> Finding:
    path, how, where = weights_path(server)
    volumes = {str(v.get("name")): v for v in dicts(server.pod_spec.get("volumes"))}
    templates = _claim_templates(server)
    mounts = [m for m in dicts(server.container.get("volumeMounts")) if isinstance(m.get("mountPath"), str)]
    pvc_mounts = [
        m["mountPath"]
        for m in mounts
        if str(m.get("name")) in templates or "persistentVolumeClaim" in volumes.get(str(m.get("name")), {})
    ]
    covering = sorted((m for m in mounts if _under(path, m["mountPath"])), key=lambda m: len(m["mountPath"]))
    if not covering:
        others = f"; PVC mounts: {', '.join(pvc_mounts)}" if pvc_mounts else "; no PVC is mounted"
        return server_finding(
            server,
            False,
            f"weights at {path} ({how}) are on no volume: they are downloaded again on every start{others}",
            where or ("volumeMounts",),
            f"mount a PersistentVolumeClaim at {path}, or point "
            f"{how if how.startswith('--') else '--download-dir'} at a PVC mount",
        )
    mount = covering[-1]
    name = str(mount.get("name"))
    if name in templates:
        claim = f"volumeClaimTemplate '{name}'"
    elif "persistentVolumeClaim" in volumes.get(name, {}):
        claim_name = str(as_dict(volumes[name]["persistentVolumeClaim"]).get("claimName"))
        claim = f"PVC '{claim_name}'" + ("" if claim_name in claims else " (not in these manifests: it must exist)")
    else:
        kind = _volume_kind(volumes[name]) if name in volumes else "an undeclared volume"
        return server_finding(
            server,
            False,
            f"weights at {path} ({how}) are on volume '{name}' ({kind}), which does not outlive the pod",
            where or ("volumeMounts",),
            f"back volume '{name}' with a persistentVolumeClaim",
        )
    if mount.get("readOnly") is True and how != "the model path":
        return server_finding(
            server,
            False,
            f"{claim} is mounted readOnly at {mount['mountPath']}, but the server downloads into {path}",
            ("volumeMounts",),
            "drop readOnly, or serve a model path already on the volume",
        )
    return server_finding(
        server,
        True,
        f"weights at {path} ({how}) are on {claim} mounted at {mount['mountPath']}",
        where or ("volumeMounts",),
    )


def run(ctx: ManifestSet) -> list[Finding]:
    claims = {d.name for d in ctx.of_kind("PersistentVolumeClaim")}
    return [_one(s, claims) for s in ctx.servers] or no_server()


CHECK = ChecklistItem("model-volume", "Model weights on a PersistentVolumeClaim", run)
