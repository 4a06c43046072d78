"""The memo's run record: the memo's text, the results file it names, and the sizing command's output on its
own `sizing_inputs`; and which of them its figures cite."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any

__all__ = ["NAMED", "MemoRun", "cited"]

#: Sizing output fields a figure may be named after (and is then compared with).
NAMED = (
    "peak_output_tokens_per_s",
    "per_stream_output_tokens_per_s",
    "replicas_for_load",
    "replicas",
    "chats_per_month",
    "batch_hours",
)


@dataclass
class MemoRun:
    memo_file: str  # as submission.yaml names it
    text: str | None  # None when it could not be read
    problem: str = ""  # why it could not be read
    results_file: str | None = None  # `loadgen_results`, when the memo names it or a figure cites `loadgen:`
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
