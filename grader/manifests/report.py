"""The text report: one line per check, then each failure with its resource, path, place and fix."""

from __future__ import annotations

from .results import Finding, ManifestReport

__all__ = ["to_text"]


def _failure(f: Finding) -> list[str]:
    subject = " ".join(part for part in (f.resource, f.path) if part)
    lines = [f"      - {subject + ': ' if subject else ''}{f.message}"]
    if f.where:
        lines.append(f"        at {f.where}")
    if f.fix:
        lines.append(f"        fix: {f.fix}")
    return lines


def to_text(report: ManifestReport, verbose: bool = False) -> str:
    """Failures in full; passing checks as one line (with their evidence when `verbose`)."""
    width = max((len(c.id) for c in report.checks), default=0)
    lines = [
        (
            f"grader manifests: {report.source} ({len(report.documents)} documents, "
            f"Kubernetes {report.kubernetes_version} schemas)"
        )
    ]
    for check in report.checks:
        status = "PASS" if check.passed else "FAIL"
        lines.append(f"{status}  {check.id.ljust(width)}  {check.title}")
        for finding in check.findings:
            if not finding.passed:
                lines.extend(_failure(finding))
            elif verbose:
                subject = " ".join(part for part in (finding.resource, finding.path) if part)
                lines.append(f"      ok {subject + ': ' if subject else ''}{finding.message}")
    passed = sum(c.passed for c in report.checks)
    lines.append(
        f"{passed} of {len(report.checks)} checks passed"
        + ("" if report.passed else f"; failed: {', '.join(report.failed_ids)}")
    )
    return "\n".join(lines) + "\n"
