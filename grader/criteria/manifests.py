"""Manifests criteria: each item of `grader manifests`' checklist is its own rubric line.

The verdicts are the checker's own results (`grader.manifests.check_manifests`), run once on the
submission's values file (rendered with the kit's chart) or rendered YAML; nothing is checked a
second time here. `manifests.schema-valid` gathers the reading checks: the YAML parses, the chart
renders, and every document validates strictly.
"""

from __future__ import annotations

from grader.contract import Submission
from grader.criteria.verdict import Verdict
from grader.grading.outcome import Evidence
from grader.grading.rubric import Criterion
from grader.manifests import (
    CheckResult,
    ManifestInputError,
    ManifestReport,
    check_manifests,
)
from grader.shared.kit_files import chart_dir

__all__ = ["CHECK_IDS", "check", "run_checker"]

#: The checker's ids behind each criterion (`manifests.<id>`); the reading checks count as one.
CHECK_IDS: dict[str, tuple[str, ...]] = {"manifests.schema-valid": ("yaml-parse", "render", "schema-valid")}


def run_checker(submission: Submission) -> ManifestReport | str:
    """The checker's report on the submission's manifests, or why it could not run at all."""
    mode, path = submission.manifests
    try:
        if mode == "values":
            return check_manifests([chart_dir()], values=path)
        return check_manifests([path])
    except ManifestInputError as exc:
        return str(exc)


def _lines(result: CheckResult) -> list[str]:
    out = []
    for f in result.findings:
        subject = " ".join(p for p in (f.resource, f.path) if p)
        where = f" ({f.where})" if f.where else ""
        fix = f" Fix: {f.fix}" if f.fix and not f.passed else ""
        out.append(f"{'ok' if f.passed else 'FAIL'} {result.id}: {subject + ': ' if subject else ''}{f.message}"
                   f"{where}.{fix}")
    return out


def check(report: ManifestReport | str, criterion: Criterion) -> Verdict:
    if isinstance(report, str):
        return Verdict(False, f"the manifests could not be checked: {report}")
    ids = CHECK_IDS.get(criterion.id, (criterion.id.split(".", 1)[1],))
    results = [c for c in report.checks if c.id in ids]
    if not results:
        return Verdict(False, f"the checker reported no {' or '.join(ids)} check on {report.source}")
    passed = all(c.passed for c in results)
    lines = [line for c in results for line in _lines(c)]
    failures = [line for line in lines if line.startswith("FAIL")]
    evidence = Evidence(sent=f"grader manifests on {report.source} (Kubernetes {report.kubernetes_version} schemas)",
                        columns=["check", "passed", "resource", "path", "message", "where"],
                        rows=[[c.id, f.passed, f.resource or "", f.path or "", f.message, f.where]
                              for c in results for f in c.findings][:50])
    return Verdict(passed, "\n".join((failures or lines)[:12]), evidence=evidence)
