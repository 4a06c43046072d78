"""Run the offline manifest checker on the submission's manifests (no candidate code runs).

The values file is rendered with the kit's chart, or the rendered YAML read as it is; the checker's
whole report is the run record, with the text of the candidate's own manifest files beside it.
criteria/manifests.py judges it.
"""

from __future__ import annotations

from grader.contract import Submission
from grader.manifests import ManifestInputError, check_manifests
from grader.records.manifests import ManifestsRun
from grader.shared.kit_files import chart_dir

__all__ = ["run_checker"]

_FILE_CAP = 200_000


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
