"""The sizing section's run record: the command's output on every input set, and on one input moved at a time."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Any

__all__ = ["SizingRun", "SizingRuns"]


@dataclass
class SizingRun:
    """One run of the command on one set: its output, or why there is none."""

    name: str
    flags: dict[str, Any]
    output: dict[str, Any] | None
    problem: str  # empty when the output is a schema-valid object
    stderr_tail: str = ""
    wall_s: float = 0.0
    exit_code: int | None = None  # None: it did not exit (a hang, a kill) or was not run


@dataclass
class SizingRuns:
    """Every set's run, plus the perturbation runs (the base set with one input moved), by the flag moved."""

    runs: list[SizingRun]
    perturb_base: str
    perturb: dict[str, Any]
    extra: dict[str, SizingRun] = field(default_factory=dict)
    refusals: list[SizingRun] = field(default_factory=list)  # runs on inputs it must refuse; `name` says which

    @property
    def wall_s(self) -> float:
        return sum(r.wall_s for r in [*self.runs, *self.extra.values()])

    @property
    def base(self) -> SizingRun:
        return next(r for r in self.runs if r.name == self.perturb_base)

    def to_record(self) -> dict[str, Any]:
        return {
            "sets": [dataclasses.asdict(r) for r in self.runs],
            "perturb_base": self.perturb_base,
            "perturb": self.perturb,
            "extra": {k: dataclasses.asdict(r) for k, r in self.extra.items()},
            "refusals": [dataclasses.asdict(r) for r in self.refusals],
        }

    @classmethod
    def from_record(cls, data: dict[str, Any]) -> SizingRuns:
        return cls(
            [SizingRun(**r) for r in data["sets"]],
            str(data["perturb_base"]),
            dict(data["perturb"]),
            {k: SizingRun(**r) for k, r in data["extra"].items()},
            [SizingRun(**r) for r in data.get("refusals", [])],
        )
