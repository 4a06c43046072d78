"""Read the memo and what its figures cite: the memo's text, the load generator's results file it
names, and the sizing command's output on the memo's own `sizing_inputs` (run once, in a sandbox).

A `MemoRun` is the run record: raw text and outputs, never a judgement; criteria/memo.py reads the
rules and compares the figures from it.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from grader.contract import Submission
from grader.shared.yaml_files import YamlError, split_front_matter

__all__ = ["MemoRun", "SizingRunner", "cited", "run_memo"]

#: Runs the sizing command once on the memo's inputs: (output or None, why not, its wall time).
SizingRunner = Callable[[dict[str, Any]], tuple[dict[str, Any] | None, str, float]]
#: Sizing output fields a figure may be named after (and is then compared with).
NAMED = (
    "peak_output_tokens_per_s",
    "per_stream_output_tokens_per_s",
    "replicas_for_load",
    "replicas",
    "chats_per_month",
    "batch_hours",
)
_TEXT_CAP = 1_000_000


@dataclass
class MemoRun:
    memo_file: str  # as submission.yaml names it
    text: str | None  # None when it could not be read
    problem: str = ""  # why it could not be read
    results_file: str | None = None  # `loadgen_results`, when a figure cites `loadgen:`
    results_text: str | None = None
    results_problem: str = ""
    sizing_flags: dict[str, Any] | None = None  # `sizing_inputs`, when a figure cites `sizing:`
    sizing_output: dict[str, Any] | None = None
    sizing_problem: str = ""
    sizing_wall_s: float = 0.0

    def to_record(self) -> dict[str, Any]:
        return dataclasses.asdict(self)

    @classmethod
    def from_record(cls, data: dict[str, Any]) -> MemoRun:
        return cls(**{f.name: data[f.name] for f in dataclasses.fields(cls)})


def cited(front: dict[str, Any]) -> tuple[bool, bool]:
    """Whether any figure cites the sizing command (or is named like one of its fields), and the results file."""
    figures = [f for f in front.get("figures") or [] if isinstance(f, dict)]
    refs = [
        r
        for f in figures
        for r in ([f["derived_from"]] if isinstance(f.get("derived_from"), str) else list(f.get("derived_from") or []))
        if isinstance(r, str)
    ]
    sizing = any(r.startswith("sizing:") for r in refs) or any(f.get("name") in NAMED for f in figures)
    return sizing, any(r.startswith("loadgen:") for r in refs)


def run_memo(submission: Submission, run_sizing: SizingRunner) -> MemoRun:
    """Read the memo, and what its figures cite (at most one sizing run)."""
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
            run.sizing_output, run.sizing_problem, run.sizing_wall_s = run_sizing(front["sizing_inputs"])
        else:
            run.sizing_problem = "the front matter states no sizing_inputs to rerun the sizing command with"
    if wants_results:
        run.results_file, run.results_text, run.results_problem = _results(submission, front.get("loadgen_results"))
    return run


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
