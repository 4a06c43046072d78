"""The manifests' run record: the offline checker's whole report, and the candidate's manifest files beside it."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from grader.manifests import ManifestReport

__all__ = ["ManifestsRun"]


@dataclass
class ManifestsRun:
    mode: str  # "values" | "rendered"
    report: ManifestReport | None  # None when the checker could not run at all
    problem: str = ""  # why it could not
    files: dict[str, str] = field(default_factory=dict)  # the candidate's manifest files, by path in the submission

    def to_record(self) -> dict[str, Any]:
        return {
            "mode": self.mode,
            "report": self.report.to_dict() if self.report else None,
            "problem": self.problem,
            "files": self.files,
        }

    @classmethod
    def from_record(cls, data: dict[str, Any]) -> ManifestsRun:
        report = ManifestReport.from_dict(data["report"]) if data["report"] is not None else None
        return cls(str(data["mode"]), report, str(data["problem"]), dict(data["files"]))
