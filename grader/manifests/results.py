"""What a manifest check produces: findings grouped by check, with exporters.

One model, several outputs (text for people, a dict/JSON for the grader), so the grader never
re-parses text. A check passes when it has at least one finding and every finding passed: a
check that found nothing to look at has failed, not passed.

`to_dict()` is the machine-readable contract; `FORMAT_VERSION` changes when a field's meaning
does.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from typing import Any

__all__ = ["FORMAT_VERSION", "CheckResult", "DocumentSummary", "Finding", "ManifestReport"]

FORMAT_VERSION = 1


@dataclass(frozen=True)
class Finding:
    """One thing a check looked at: which resource, which field, and whether it is right.

    `fix` is one line saying what to change; it is empty for findings that passed.
    """

    passed: bool
    message: str
    resource: str | None = None  # "Deployment/vllm"
    path: str | None = None  # "spec.template.spec.containers[0].resources.limits"
    fix: str = ""
    file: str | None = None
    line: int | None = None

    @property
    def where(self) -> str:
        """`file:line` when known, else the file, else an empty string."""
        if self.file and self.line:
            return f"{self.file}:{self.line}"
        return self.file or ""

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass
class CheckResult:
    """One named check (a stable `id`) and its findings."""

    id: str
    title: str
    findings: list[Finding] = field(default_factory=list)

    @property
    def passed(self) -> bool:
        return bool(self.findings) and all(f.passed for f in self.findings)

    @property
    def failures(self) -> list[Finding]:
        return [f for f in self.findings if not f.passed]

    def to_dict(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "title": self.title,
            "passed": self.passed,
            "findings": [f.to_dict() for f in self.findings],
        }

    def to_gradescope(self) -> dict[str, Any]:
        """A Gradescope `tests[]` entry without score or visibility: the rubric sets those."""
        lines = []
        for f in self.findings:
            subject = " ".join(p for p in (f.resource, f.path) if p)
            where = f" ({f.where})" if f.where else ""
            fix = f" Fix: {f.fix}" if f.fix else ""
            lines.append(f"{'ok' if f.passed else 'FAIL'} {subject + ': ' if subject else ''}{f.message}{where}.{fix}")
        return {
            "name": f"{self.id}: {self.title}",
            "status": "passed" if self.passed else "failed",
            "output": "\n".join(lines),
            "tags": ["manifests", self.id],
        }


@dataclass(frozen=True)
class DocumentSummary:
    """A document that was checked, and where it came from."""

    api_version: str
    kind: str
    name: str
    namespace: str | None
    file: str
    line: int

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass
class ManifestReport:
    """Everything one run of the checker found."""

    source: str
    kubernetes_version: str
    documents: list[DocumentSummary] = field(default_factory=list)
    checks: list[CheckResult] = field(default_factory=list)

    @property
    def passed(self) -> bool:
        return bool(self.checks) and all(c.passed for c in self.checks)

    @property
    def exit_code(self) -> int:
        """0 only when every check passed."""
        return 0 if self.passed else 1

    def check(self, check_id: str) -> CheckResult:
        for result in self.checks:
            if result.id == check_id:
                return result
        raise KeyError(check_id)

    @property
    def failed_ids(self) -> list[str]:
        return [c.id for c in self.checks if not c.passed]

    def to_dict(self) -> dict[str, Any]:
        return {
            "format_version": FORMAT_VERSION,
            "source": self.source,
            "kubernetes_version": self.kubernetes_version,
            "passed": self.passed,
            "summary": {
                "checks": len(self.checks),
                "passed": sum(c.passed for c in self.checks),
                "failed": self.failed_ids,
            },
            "documents": [d.to_dict() for d in self.documents],
            "checks": [c.to_dict() for c in self.checks],
        }

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), indent=2)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> ManifestReport:
        """The report `to_dict` wrote (a grade's run record keeps it so)."""
        return cls(
            source=data["source"],
            kubernetes_version=data["kubernetes_version"],
            documents=[DocumentSummary(**d) for d in data["documents"]],
            checks=[CheckResult(c["id"], c["title"], [Finding(**f) for f in c["findings"]]) for c in data["checks"]],
        )

    def to_gradescope_tests(self) -> list[dict[str, Any]]:
        """One Gradescope test per check, in report order."""
        return [c.to_gradescope() for c in self.checks]
