"""Run the offline manifest checker on the submission's manifests (no candidate code runs).

The values file is rendered with the kit's chart, or the rendered YAML read as it is; the checker's
whole report is the run record, with the text of the candidate's own manifest files beside it.
criteria/manifests.py judges it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from grader.contract import Submission
from grader.manifests import ManifestInputError, ManifestReport, check_manifests
from grader.shared.kit_files import chart_dir

__all__ = ["ManifestsRun", "run_checker"]

_FILE_CAP = 200_000


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


def run_checker(submission: Submission) -> ManifestsRun:
    """The checker's report on the submission's manifests, or why it could not run at all."""
    mode, path = submission.manifests
    files = {}
    for file in [path] if path.is_file() else sorted(path.rglob("*.y*ml")) if path.is_dir() else []:
        try:
            files[file.relative_to(submission.folder).as_posix()] = file.read_text(encoding="utf-8")[:_FILE_CAP]
        except (OSError, UnicodeDecodeError, ValueError):
            continue
    try:
        report = check_manifests([chart_dir()], values=path) if mode == "values" else check_manifests([path])
    except ManifestInputError as exc:
        return ManifestsRun(mode, None, str(exc), files)
    return ManifestsRun(mode, report, "", files)
