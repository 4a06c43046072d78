"""max-model-len: the server states its context length, once, and nothing else disagrees.

Without `--max-model-len` vLLM takes the model's maximum (32k-128k tokens), sizes its KV-cache
planning for it and accepts prompts the sizing never assumed. The flag given twice with
different values (a values file appending to the chart's args) leaves the first one dead.
Any other statement of the length in the manifests must agree: a gateway's context check in
a ConfigMap, an environment variable, another container's flag. With chunked prefill turned
off, `--max-num-batched-tokens` below the length makes vLLM refuse to start.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

import yaml

from ..fieldpath import fmt_path
from ..loader import Document, PathKey
from ..results import Finding
from ..workload import ServingContainer, parse_length
from .base import ChecklistItem, ManifestSet, doc_finding, no_server, server_finding

__all__ = ["CHECK", "length_statements"]

#: Names (normalised to snake_case) that state a context length in other configuration.
_LENGTH_NAMES = (
    "max_model_len",
    "max_context_len",
    "max_context_length",
    "context_length",
    "context_window",
    "max_context_tokens",
)


def _norm(name: str) -> str:
    return re.sub(r"(?<=[a-z0-9])(?=[A-Z])", "_", name).replace("-", "_").lower().lstrip("_")


def _is_length_name(name: str) -> bool:
    norm = _norm(name)
    return any(norm == n or norm.endswith("_" + n) for n in _LENGTH_NAMES)


def _walk(node: Any, path: PathKey) -> Iterator[tuple[PathKey, Any]]:
    if isinstance(node, dict):
        for key, value in node.items():
            yield path + (str(key),), value
            yield from _walk(value, path + (str(key),))
    elif isinstance(node, list):
        for i, value in enumerate(node):
            yield from _walk(value, path + (i,))


def _as_length(value: Any) -> int | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    return parse_length(value) if isinstance(value, str) else None


def length_statements(doc: Document, skip: set[PathKey]) -> Iterator[tuple[PathKey, int]]:
    """Every (path, length) a document states outside the server containers in `skip`.

    Looked for: keys named like a context length, env entries named like one, `--...-len`
    style flags in other containers, and the same keys inside ConfigMap values holding YAML or
    JSON (a gateway's config file).
    """
    for path, value in _walk(doc.data, ()):
        key = path[-1]
        if isinstance(key, str) and _is_length_name(key) and (n := _as_length(value)) is not None:
            yield path, n
        if key == "name" and isinstance(value, str) and _is_length_name(value):
            parent = _get(doc.data, path[:-1])
            if isinstance(parent, dict) and (n := _as_length(parent.get("value"))) is not None:
                yield path[:-1] + ("value",), n
        if isinstance(value, list) and key in ("args", "command") and path[:-1] not in skip:
            for i, token in enumerate(value):
                flag, eq, rest = str(token).partition("=")
                given = rest if eq else (str(value[i + 1]) if i + 1 < len(value) else "")
                if flag.startswith("--") and _is_length_name(flag[2:]) and (n := parse_length(given)) is not None:
                    yield path + (i,), n
    if doc.kind == "ConfigMap" and isinstance(doc.data.get("data"), dict):
        for name, text in doc.data["data"].items():
            try:
                parsed = yaml.safe_load(text) if isinstance(text, str) and "\n" in text else None
            except yaml.YAMLError:
                continue
            for path, value in _walk(parsed, ("data", str(name))):
                if isinstance(path[-1], str) and _is_length_name(path[-1]) and (n := _as_length(value)) is not None:
                    yield path, n


def _get(node: Any, path: PathKey) -> Any:
    for key in path:
        if isinstance(node, dict):
            node = node.get(key)
        elif isinstance(node, list) and isinstance(key, int):
            node = node[key]
        else:
            return None
    return node


def _chunked_prefill_off(server: ServingContainer) -> bool:
    if server.flag("--no-enable-chunked-prefill"):
        return True
    on = server.flag("--enable-chunked-prefill")
    return bool(on) and str(on[-1].value).lower() in ("false", "0", "no")


def _one(server: ServingContainer, docs: list[Document], servers: list[ServingContainer]) -> list[Finding]:
    given = server.flag("--max-model-len")
    if not given:
        return [
            server_finding(
                server,
                False,
                "no --max-model-len: vLLM takes the model's maximum context, which the sizing did not plan for",
                ("args",),
                "add --max-model-len N to the args",
            )
        ]
    lengths = [parse_length(g.value or "") for g in given]
    for occurrence, length in zip(given, lengths, strict=True):
        if length is None:
            return [
                server_finding(
                    server,
                    False,
                    f"--max-model-len {occurrence.value!r} is not a token count; the "
                    "length is then decided at startup, not in the manifest",
                    occurrence.path,
                    "give --max-model-len a number of tokens, e.g. 8192",
                )
            ]
    if len(set(lengths)) > 1:
        shown = ", ".join(g.value or "" for g in given)
        return [
            server_finding(
                server,
                False,
                f"--max-model-len is given {len(given)} times ({shown}); "
                f"the last ({given[-1].value}) wins and the others are dead configuration",
                given[0].path,
                "keep one --max-model-len",
            )
        ]
    length = lengths[-1]
    assert length is not None  # every occurrence parsed, checked above
    findings = []
    batched = server.flag("--max-num-batched-tokens")
    budget = parse_length(batched[-1].value or "") if batched else None
    if budget is not None and budget < length and _chunked_prefill_off(server):
        findings.append(
            server_finding(
                server,
                False,
                f"--max-num-batched-tokens {budget} is below --max-model-len "
                f"{length} with chunked prefill off; vLLM refuses to start",
                batched[-1].path,
                f"raise --max-num-batched-tokens to {length} or enable chunked prefill",
            )
        )
    agreeing = []
    for doc in docs:
        own = {s.path for s in servers if s.doc is doc}
        for path, stated in length_statements(doc, own):
            if stated != length:
                findings.append(
                    doc_finding(
                        doc,
                        False,
                        f"states a context length of {stated}, but {server.doc.ref} serves --max-model-len {length}",
                        path,
                        f"make them equal ({length})",
                    )
                )
            else:
                agreeing.append(f"{doc.ref} {fmt_path(path)}")
    if findings:
        return findings
    also = f"; agrees with {', '.join(agreeing)}" if agreeing else ""
    return [server_finding(server, True, f"--max-model-len {length}{also}", given[-1].path)]


def run(ctx: ManifestSet) -> list[Finding]:
    return [f for s in ctx.servers for f in _one(s, ctx.documents, ctx.servers)] or no_server()


CHECK = ChecklistItem("max-model-len", "--max-model-len present and consistent", run)
