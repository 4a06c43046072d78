"""pdb-selects-pods: a PodDisruptionBudget whose selector matches the server's pods.

In policy/v1 a PDB with no selector matches no pods (vLLM's example chart renders it that
way), and an empty selector matches every pod in the namespace; both pass schema validation.
A selector that matches other pods protects them instead. Only a PDB that selects the
server's pod labels, in the same namespace, counts.
"""

from __future__ import annotations

from typing import Any

from ..loader import Document
from ..results import Finding
from ..shape import as_dict, as_list, dicts
from .base import ChecklistItem, ManifestSet, doc_finding, no_server

__all__ = ["CHECK", "selector_matches"]


def selector_matches(selector: dict[str, Any], labels: dict[str, str]) -> bool:
    """Kubernetes label-selector semantics: every matchLabels pair and every expression holds."""
    for key, value in as_dict(selector.get("matchLabels")).items():
        if labels.get(str(key)) != str(value):
            return False
    for expr in dicts(selector.get("matchExpressions")):
        key, op = str(expr.get("key")), expr.get("operator")
        values = [str(v) for v in as_list(expr.get("values"))]
        if op == "In" and labels.get(key) not in values:
            return False
        if op == "NotIn" and key in labels and labels[key] in values:
            return False
        if op == "Exists" and key not in labels:
            return False
        if op == "DoesNotExist" and key in labels:
            return False
    return True


def _selector(pdb: Document) -> dict[str, Any] | None:
    selector = as_dict(pdb.data.get("spec")).get("selector")
    return selector if isinstance(selector, dict) else None


def _fmt(labels: dict[str, Any]) -> str:
    return ",".join(f"{k}={v}" for k, v in sorted(labels.items())) or "(none)"


def _broken(pdb: Document) -> Finding | None:
    """A PDB whose selector is missing or empty is wrong whatever else is in the manifests."""
    selector = _selector(pdb)
    if selector is None:
        return doc_finding(
            pdb,
            False,
            "no selector: in policy/v1 a PodDisruptionBudget without one matches no pods, so it protects nothing",
            ("spec", "selector"),
            "set spec.selector.matchLabels to the server pods' labels",
        )
    if not selector.get("matchLabels") and not selector.get("matchExpressions"):
        return doc_finding(
            pdb,
            False,
            "empty selector: in policy/v1 it matches every pod in the namespace",
            ("spec", "selector"),
            "set spec.selector.matchLabels to the server pods' labels",
        )
    return None


def run(ctx: ManifestSet) -> list[Finding]:
    if not ctx.servers:
        return no_server()
    pdbs = ctx.of_kind("PodDisruptionBudget")
    findings = [f for f in map(_broken, pdbs) if f is not None]
    usable = [p for p in pdbs if _broken(p) is None]
    workloads = {id(s.doc): s for s in ctx.servers}.values()
    for server in workloads:
        labels, ns = server.pod_labels, server.doc.namespace
        same_ns = [p for p in usable if p.namespace is None or ns is None or p.namespace == ns]
        matching = [p for p in same_ns if selector_matches(_selector(p) or {}, labels)]
        for pdb in matching:
            findings.append(
                doc_finding(pdb, True, f"selects the pods of {server.doc.ref} ({_fmt(labels)})", ("spec", "selector"))
            )
        if matching:
            continue
        for pdb in same_ns:
            selected = _fmt(as_dict(as_dict(_selector(pdb)).get("matchLabels")))
            findings.append(
                doc_finding(
                    pdb,
                    False,
                    f"selector {selected} does not match the pods of {server.doc.ref}, labelled {_fmt(labels)}",
                    ("spec", "selector"),
                    f"set spec.selector.matchLabels to {_fmt(labels)}",
                )
            )
        if not same_ns and len(usable) == len(pdbs):  # broken PDBs have already said why
            where = f" in namespace {ns}" if pdbs else ""
            findings.append(
                doc_finding(
                    server.doc,
                    False,
                    f"no PodDisruptionBudget{where}: a node drain or a "
                    "cluster-autoscaler scale-down may evict the only replica",
                    (),
                    "add a policy/v1 PodDisruptionBudget selecting the server pods' labels",
                )
            )
    return findings


CHECK = ChecklistItem("pdb-selects-pods", "PodDisruptionBudget that selects the server pods", run)
