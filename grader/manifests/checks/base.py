"""What every checklist item shares: its declaration, its input, and finding helpers."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from ..fieldpath import fmt_path
from ..loader import Document, PathKey
from ..results import Finding
from ..workload import ServingContainer

__all__ = ["ChecklistItem", "ManifestSet", "doc_finding", "no_server", "server_finding"]


@dataclass(frozen=True)
class ManifestSet:
    """The parsed manifests and the serving containers found in them."""

    documents: list[Document]
    servers: list[ServingContainer]

    def of_kind(self, kind: str) -> list[Document]:
        return [d for d in self.documents if d.kind == kind]


@dataclass(frozen=True)
class ChecklistItem:
    """A checklist item: a stable id (the grader keys results on it), a title and its rule."""

    id: str
    title: str
    run: Callable[[ManifestSet], list[Finding]]


def server_finding(server: ServingContainer, passed: bool, message: str, rel: PathKey = (), fix: str = "") -> Finding:
    """A finding about a field of the serving container (`rel` is relative to it)."""
    return Finding(
        passed=passed,
        message=message,
        resource=server.doc.ref,
        path=server.field_path(*rel),
        fix="" if passed else fix,
        file=server.doc.file,
        line=server.line(*rel),
    )


def doc_finding(doc: Document, passed: bool, message: str, path: PathKey = (), fix: str = "") -> Finding:
    """A finding about a field of any document."""
    return Finding(
        passed=passed,
        message=message,
        resource=doc.ref,
        path=fmt_path(path) if path else None,
        fix="" if passed else fix,
        file=doc.file,
        line=doc.line_of(path),
    )


def no_server() -> list[Finding]:
    """The one finding of every checklist item when there is nothing to check."""
    return [
        Finding(
            passed=False,
            message="no serving container found: no Deployment, StatefulSet or Pod runs "
            "`vllm serve`, vLLM's api_server module, a *vllm* image or `fake-server`",
            fix="include the Deployment that runs vLLM in the manifests",
        )
    ]
