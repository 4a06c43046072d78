"""hf-token-secret: the Hugging Face token reaches the server from a Secret, by `secretKeyRef`.

Passes: `env: [{name: HF_TOKEN, valueFrom: {secretKeyRef: {name, key}}}]` (or
HUGGING_FACE_HUB_TOKEN, the older name huggingface_hub still reads).

Fails:
- a literal `value`: the token is in the manifest, readable by anyone who can read the
  Deployment or the repository;
- `configMapKeyRef`: ConfigMaps are not for secrets;
- `secretKeyRef.optional: true`: a missing Secret then starts the server without a token;
- the token only through `envFrom: [{secretRef: ...}]`. Decision: envFrom does not pass.
  It imports whatever keys the Secret has, so HF_TOKEN exists only if the out-of-band Secret
  happens to have a key spelled exactly that; the manifests cannot show it, and a wrong
  spelling starts vLLM silently without a token (gated models then fail with 401 mid-download).
  With secretKeyRef the variable is named in the manifest and a missing key stops the pod at
  CreateContainerConfigError naming it. envFrom also exposes every other key of the Secret;
- no token at all;
- anywhere in the manifests, a string that looks like a real token (`hf_` + 30 or more
  letters and digits), including base64 `data` of a Secret: it has been committed.
"""

from __future__ import annotations

import base64
import binascii
import re
from collections.abc import Iterator
from typing import Any

from ..loader import Document, PathKey
from ..results import Finding
from ..shape import as_dict, as_list
from ..workload import ServingContainer
from .base import ChecklistItem, ManifestSet, doc_finding, no_server, server_finding

__all__ = ["CHECK", "TOKEN_NAMES"]

TOKEN_NAMES = ("HF_TOKEN", "HUGGING_FACE_HUB_TOKEN")
_TOKEN = re.compile(r"hf_[A-Za-z0-9]{30,}")
_FIX = "use env HF_TOKEN with valueFrom.secretKeyRef {name: <secret>, key: <key>}"


def _strings(node: Any, path: PathKey) -> Iterator[tuple[PathKey, str]]:
    if isinstance(node, dict):
        for key, value in node.items():
            yield from _strings(value, path + (str(key),))
    elif isinstance(node, list):
        for i, value in enumerate(node):
            yield from _strings(value, path + (i,))
    elif isinstance(node, str):
        yield path, node


def _decoded(doc: Document, path: PathKey, text: str) -> str:
    if doc.kind == "Secret" and path[:1] == ("data",):
        try:
            return base64.b64decode(text, validate=True).decode("utf-8", "replace")
        except (binascii.Error, ValueError):
            return text
    return text


def _committed_tokens(docs: list[Document]) -> list[Finding]:
    return [
        doc_finding(
            doc,
            False,
            "a Hugging Face token is committed in the manifests",
            path,
            "revoke the token, remove it, and create the Secret out of band (kubectl create secret)",
        )
        for doc in docs
        for path, text in _strings(doc.data, ())
        if _TOKEN.search(_decoded(doc, path, text))
    ]


def _one(server: ServingContainer) -> Finding:
    for i, item in server.env():
        if item.get("name") not in TOKEN_NAMES:
            continue
        name = item["name"]
        if "value" in item:
            return server_finding(
                server,
                False,
                f"{name} is a literal value in the manifest, readable by anyone who "
                "can read the Deployment or the repository",
                ("env", i, "value"),
                _FIX,
            )
        source = as_dict(item.get("valueFrom"))
        if "configMapKeyRef" in source:
            return server_finding(
                server, False, f"{name} comes from a ConfigMap, which is not for secrets", ("env", i, "valueFrom"), _FIX
            )
        ref = source.get("secretKeyRef")
        if not isinstance(ref, dict) or not ref.get("name") or not ref.get("key"):
            return server_finding(
                server, False, f"{name} has no valueFrom.secretKeyRef with a name and a key", ("env", i), _FIX
            )
        if ref.get("optional") is True:
            return server_finding(
                server,
                False,
                f"{name} is optional: without the Secret the server starts with no token instead of failing",
                ("env", i, "valueFrom", "secretKeyRef", "optional"),
                "remove optional: true",
            )
        return server_finding(
            server,
            True,
            f"{name} from Secret '{ref['name']}' key '{ref['key']}' (secretKeyRef)",
            ("env", i, "valueFrom", "secretKeyRef"),
        )
    env_from = enumerate(as_list(server.container.get("envFrom")))
    secret_refs = [
        (i, as_dict(e)["secretRef"].get("name")) for i, e in env_from if isinstance(as_dict(e).get("secretRef"), dict)
    ]
    if secret_refs:
        i, secret = secret_refs[0]
        return server_finding(
            server,
            False,
            f"no HF_TOKEN by name, only envFrom Secret '{secret}': whether it sets "
            "HF_TOKEN depends on a key the manifests cannot show, and a misspelt key starts the "
            "server without a token",
            ("envFrom", i, "secretRef"),
            f"add env HF_TOKEN with valueFrom.secretKeyRef {{name: {secret}, key: <key>}}",
        )
    return server_finding(
        server, False, "no HF_TOKEN: gated models (Llama, Gemma, ...) cannot be downloaded", ("env",), _FIX
    )


def run(ctx: ManifestSet) -> list[Finding]:
    if not ctx.servers:
        return no_server()
    return [_one(s) for s in ctx.servers] + _committed_tokens(ctx.documents)


CHECK = ChecklistItem("hf-token-secret", "Hugging Face token from a Secret (secretKeyRef)", run)
