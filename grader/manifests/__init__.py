"""The offline manifest checker: strict schema validation plus the serving checklist.

    from grader.manifests import check_manifests
    report = check_manifests([Path("chart")], values=Path("my-values.yaml"))
    report.passed, report.check("pdb-selects-pods").findings, report.to_dict()

Modules, each with one job: `loader` (YAML with lines), `render` (Helm SDK), `schema_store`
(kubeconform's layout), `validate` (strict schemas), `workload` (finding the server),
`checks/` (one module per checklist item), `shape` (tolerant field access), `results`
(dataclasses and exporters), `report` (text), `run` (the pipeline).
"""

from __future__ import annotations

from .checks import CHECKLIST
from .report import to_text
from .results import (
    FORMAT_VERSION,
    CheckResult,
    DocumentSummary,
    Finding,
    ManifestReport,
)
from .run import ManifestInputError, check_manifests
from .schema_store import KUBERNETES_VERSION

__all__ = [
    "CHECKLIST",
    "FORMAT_VERSION",
    "KUBERNETES_VERSION",
    "CheckResult",
    "DocumentSummary",
    "Finding",
    "ManifestInputError",
    "ManifestReport",
    "check_manifests",
    "to_text",
]
