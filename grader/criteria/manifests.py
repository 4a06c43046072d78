"""Manifests criteria: each item of `grader manifests`' checklist is its own rubric line.

The verdicts are the checker's own results (`grader.manifests.check_manifests`, run once by
running/manifests.py on the submission's values file rendered with the kit's chart, or its rendered
YAML); nothing is checked a second time here. `manifests.schema-valid` gathers the reading checks:
the YAML parses, the chart renders, and every document validates strictly.
"""

from __future__ import annotations

from grader.criteria.registry import check
from grader.criteria.verdict import Verdict
from grader.manifests import CheckResult
from grader.outcome import Evidence
from grader.records.manifests import ManifestsRun
from grader.rubric import Criterion

__all__ = ["CHECK_IDS"]

#: The checker's ids behind each criterion (`manifests.<id>`); the reading checks count as one.
CHECK_IDS: dict[str, tuple[str, ...]] = {"manifests.schema-valid": ("yaml-parse", "render", "schema-valid")}
_ITEMS = (
    "manifests.schema-valid",
    "manifests.gpu-request",
    "manifests.readiness-probe",
    "manifests.startup-probe",
    "manifests.pdb-selects-pods",
    "manifests.memory-limit",
    "manifests.model-volume",
    "manifests.hf-token-secret",
    "manifests.max-model-len",
)


def _lines(result: CheckResult) -> list[str]:
    out = []
    for f in result.findings:
        subject = " ".join(p for p in (f.resource, f.path) if p)
        where = f" ({f.where})" if f.where else ""
        fix = f" Fix: {f.fix}" if f.fix and not f.passed else ""
        out.append(
            f"{'ok' if f.passed else 'FAIL'} {result.id}: {subject + ': ' if subject else ''}{f.message}{where}.{fix}"
        )
    return out


@check("manifests", *_ITEMS)
def check_item(run: ManifestsRun, criterion: Criterion) -> Verdict:
    report = run.report
    if report is None:
        return Verdict(False, f"the manifests could not be checked: {run.problem}")
    ids = CHECK_IDS.get(criterion.id, (criterion.id.split(".", 1)[1],))
    results = [c for c in report.checks if c.id in ids]
    if not results:
        return Verdict(False, f"the checker reported no {' or '.join(ids)} check on {report.source}")
    passed = all(c.passed for c in results)
    lines = [line for c in results for line in _lines(c)]
    failures = [line for line in lines if line.startswith("FAIL")]
    evidence = Evidence(
        sent=f"grader manifests on {report.source} (Kubernetes {report.kubernetes_version} schemas)",
        columns=["check", "passed", "resource", "path", "message", "where"],
        rows=[
            [c.id, f.passed, f.resource or "", f.path or "", f.message, f.where] for c in results for f in c.findings
        ][:50],
    )
    return Verdict(passed, "\n".join((failures or lines)[:12]), evidence=evidence)
