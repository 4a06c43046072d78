"""Find the serving container in a set of manifests and read its command line.

A serving container is one that runs vLLM (`vllm serve`, `python -m
vllm.entrypoints.openai.api_server`, an image named *vllm*) or the kit's fake server, or that
passes `--max-model-len`. Sidecars (a gateway, a metrics exporter) are not checked as servers.

The command line is `command` + `args`; a shell script (`sh -c "vllm serve ..."`) is split
with shell rules so flags inside it count. Flags are matched the way vLLM's parser does:
`--max-model-len 8192`, `--max-model-len=8192` and `--max_model_len 8192` are the same flag.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from .fieldpath import fmt_path
from .loader import Document, PathKey

__all__ = ["WORKLOAD_POD_SPECS", "FlagValue", "ServingContainer", "find_servers", "parse_length"]

#: Where each workload kind keeps its pod spec.
WORKLOAD_POD_SPECS: dict[str, PathKey] = {
    "Deployment": ("spec", "template", "spec"),
    "StatefulSet": ("spec", "template", "spec"),
    "Pod": ("spec",),
}

_SERVER_TOKENS = re.compile(r"(^|/)(vllm|fake-server|fake_server)$|^vllm\.entrypoints")


@dataclass(frozen=True)
class FlagValue:
    """One occurrence of a flag: its value (None when bare) and where it was written."""

    value: str | None
    path: PathKey  # ("args", 3) or ("command", 0), relative to the container


def parse_length(text: str) -> int | None:
    """A token count as vLLM reads it: `8192`, `8k` (8000) or `8K` (8192); None if not one."""
    match = re.fullmatch(r"(\d+(?:\.\d+)?)([kmgKMG]?)", text.strip())
    if not match:
        return None
    number, unit = float(match.group(1)), match.group(2)
    scale = {"": 1, "k": 10**3, "m": 10**6, "g": 10**9, "K": 2**10, "M": 2**20, "G": 2**30}[unit]
    value = number * scale
    return int(value) if value.is_integer() and value > 0 else None


@dataclass
class ServingContainer:
    """The server container of one workload, with the pod around it."""

    doc: Document
    pod_path: PathKey
    index: int
    argv: list[str] = field(default_factory=list)
    origins: list[PathKey] = field(default_factory=list)

    @property
    def pod_spec(self) -> dict[str, Any]:
        node: Any = self.doc.data
        for key in self.pod_path:
            node = node.get(key, {}) if isinstance(node, dict) else {}
        return node if isinstance(node, dict) else {}

    @property
    def container(self) -> dict[str, Any]:
        container: dict[str, Any] = self.pod_spec["containers"][self.index]
        return container

    @property
    def path(self) -> PathKey:
        return self.pod_path + ("containers", self.index)

    @property
    def name(self) -> str:
        return str(self.container.get("name") or f"#{self.index}")

    @property
    def pod_labels(self) -> dict[str, str]:
        meta_path = self.pod_path[:-1] + ("metadata",) if self.pod_path[:-1] else ("metadata",)
        node: Any = self.doc.data
        for key in meta_path:
            node = node.get(key, {}) if isinstance(node, dict) else {}
        labels = node.get("labels") if isinstance(node, dict) else None
        return {str(k): str(v) for k, v in labels.items()} if isinstance(labels, dict) else {}

    def field_path(self, *rel: str | int) -> str:
        """The readable path of a field of this container."""
        return fmt_path(self.path + rel)

    def line(self, *rel: str | int) -> int:
        return self.doc.line_of(self.path + rel)

    def flag(self, *names: str) -> list[FlagValue]:
        """Every occurrence of any of `names` (spelled with dashes), in order."""
        wanted = {n.replace("_", "-") for n in names}
        found = []
        for i, token in enumerate(self.argv):
            if not token.startswith("-"):
                continue
            name, eq, value = token.partition("=")
            if name.replace("_", "-") not in wanted:
                continue
            if eq:
                found.append(FlagValue(value, self.origins[i]))
            elif i + 1 < len(self.argv) and not self.argv[i + 1].startswith("-"):
                found.append(FlagValue(self.argv[i + 1], self.origins[i + 1]))
            else:
                found.append(FlagValue(None, self.origins[i]))
        return found

    def positional_model(self) -> FlagValue | None:
        """The model named after `vllm serve`, if the command line has one."""
        for i, token in enumerate(self.argv[:-1]):
            if token == "serve" and i > 0 and _SERVER_TOKENS.search(self.argv[i - 1]):
                following = self.argv[i + 1]
                if not following.startswith("-"):
                    return FlagValue(following, self.origins[i + 1])
        return None

    def env(self) -> list[tuple[int, dict[str, Any]]]:
        """(index, item) for each well-formed `env` entry."""
        items = self.container.get("env") or []
        return [(i, e) for i, e in enumerate(items) if isinstance(e, dict)] if isinstance(items, list) else []

    def env_value(self, name: str) -> tuple[int, str] | None:
        """The literal value of env var `name`, with its index; None if absent or not literal."""
        for i, item in self.env():
            if item.get("name") == name and isinstance(item.get("value"), str):
                return i, item["value"]
        return None


def _argv(container: dict[str, Any]) -> tuple[list[str], list[PathKey]]:
    argv: list[str] = []
    origins: list[PathKey] = []
    for key in ("command", "args"):
        items = container.get(key) or []
        for j, item in enumerate(items if isinstance(items, list) else []):
            text = str(item)
            parts = shlex.split(text) if any(c.isspace() for c in text.strip()) else [text]
            argv.extend(parts)
            origins.extend([(key, j)] * len(parts))
    return argv, origins


def _is_server(container: dict[str, Any], argv: Iterable[str]) -> bool:
    argv = list(argv)
    if any(_SERVER_TOKENS.search(token) for token in argv):
        return True
    if any(token.split("=")[0].replace("_", "-") == "--max-model-len" for token in argv):
        return True
    image = str(container.get("image") or "").split("@")[0].rsplit(":", 1)[0]
    return "vllm" in image.rsplit("/", 1)[-1]


def find_servers(docs: Iterable[Document]) -> list[ServingContainer]:
    """Every serving container in every workload document."""
    servers = []
    for doc in docs:
        pod_path = WORKLOAD_POD_SPECS.get(doc.kind)
        if pod_path is None:
            continue
        node: Any = doc.data
        for key in pod_path:
            node = node.get(key, {}) if isinstance(node, dict) else {}
        containers = node.get("containers") if isinstance(node, dict) else None
        for i, container in enumerate(containers if isinstance(containers, list) else []):
            if not isinstance(container, dict):
                continue
            argv, origins = _argv(container)
            if _is_server(container, argv):
                servers.append(ServingContainer(doc, pod_path, i, argv, origins))
    return servers
