"""Read the memo and what its figures cite: the memo's text, the load generator's results file it
names (its own measurements come from there), and the `sizing_inputs` its figures want the sizing command
run on. The section (grading/sections.py) makes that one sizing run, in a sandbox, and adds its output
(`with_sizing`): reading the memo runs nothing.

A `MemoRun` is the run record: raw text and outputs, never a judgement; criteria/memo.py reads the
rules and compares the figures from it.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from grader.contract import Submission
from grader.records.memo import MemoRun, cited
from grader.shared.yaml_files import YamlError, split_front_matter

__all__ = ["read_memo", "with_sizing"]

_TEXT_CAP = 1_000_000


def read_memo(submission: Submission) -> MemoRun:
    """Read the memo, and what its figures cite; `sizing_flags` set when a figure wants the sizing command run on
    the memo's `sizing_inputs` (the caller runs it: `with_sizing`)."""
    path = submission.path("memo")
    run = MemoRun(str(submission.data["memo"]), None)
    try:
        run.text = path.read_text(encoding="utf-8")[:_TEXT_CAP]
    except (OSError, UnicodeDecodeError) as exc:
        run.problem = f"{path.name}: cannot read ({exc})"
        return run
    try:
        front = split_front_matter(run.text, source=path.name).data
    except YamlError:
        return run  # the rules report it; nothing is cited
    wants_sizing, wants_results = cited(front)
    if wants_sizing:
        if isinstance(front.get("sizing_inputs"), dict):
            run.sizing_flags = front["sizing_inputs"]
        else:
            run.sizing_problem = "the front matter states no sizing_inputs to rerun the sizing command with"
    if wants_results or "loadgen_results" in front:  # the memo's own measurements are read from it too
        run.results_file, run.results_text, run.results_problem = _results(submission, front.get("loadgen_results"))
    return run


def with_sizing(run: MemoRun, output: dict[str, Any] | None, problem: str, wall_s: float) -> MemoRun:
    """The memo's run with the sizing command's output on its `sizing_inputs` (None and why, when there is none)."""
    return replace(run, sizing_output=output, sizing_problem=problem, sizing_wall_s=wall_s)


def _results(submission: Submission, rel: Any) -> tuple[str | None, str | None, str]:
    if not isinstance(rel, str):
        return None, None, "the front matter names no loadgen_results file"
    folder = submission.folder.resolve()
    path = (folder / rel).resolve()
    if folder not in path.parents or not path.is_file():
        return rel, None, f"loadgen_results: {rel} is not a file inside the submission"
    try:
        return rel, path.read_text(encoding="utf-8")[:_TEXT_CAP], ""
    except (OSError, UnicodeDecodeError) as exc:
        return rel, None, f"loadgen_results: {rel} cannot be read ({exc})"
