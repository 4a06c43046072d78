"""The candidate's tests' run record: the test command on the candidate's own code, and once per broken variant."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Any

__all__ = ["PERCENTILE_METHODS", "UNSEEN_PERCENTILE", "TestRun", "TestRuns"]

#: The wrong percentile methods swapped in for the candidate's function, one run each: the brief names these.
PERCENTILE_METHODS = ("linear", "floor", "off-by-one", "unsorted")
#: How a run of a wrong method the brief does not name is called, before the method's name (grader/unseen/).
UNSEEN_PERCENTILE = "unseen percentile: "


@dataclass
class TestRun:
    variant: str  # "own code", "percentile: linear", "no slot limit", ...
    exit_code: int | None
    killed: str | None
    tests: dict[str, str]  # node id -> passed | failed | skipped (pytest only; empty otherwise)
    swapped: bool  # the percentile function was really replaced
    logs: str
    wall_s: float
    cpu_waiting: float | None = None  # the share of its time some task waited for a core (None: not counted)

    @property
    def failed(self) -> list[str]:
        return sorted(k for k, v in self.tests.items() if v == "failed")

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> TestRun:
        return cls(**{f.name: data[f.name] for f in dataclasses.fields(cls) if f.name in data})


@dataclass
class TestRuns:
    own: TestRun
    variants: dict[str, TestRun] = field(default_factory=dict)

    @property
    def unseen_percentiles(self) -> dict[str, TestRun]:
        """The runs of wrong methods the brief does not name, by the method's name (none in a self-check)."""
        return {
            name.removeprefix(UNSEEN_PERCENTILE): run
            for name, run in self.variants.items()
            if name.startswith(UNSEEN_PERCENTILE)
        }

    def has(self, variant: str) -> bool:
        """Whether the runs of a variant kind ("percentile", "slots") were made."""
        names = [f"percentile: {m}" for m in PERCENTILE_METHODS] if variant == "percentile" else ["no slot limit"]
        return all(name in self.variants for name in names)

    def to_record(self) -> dict[str, Any]:
        return {
            "own": dataclasses.asdict(self.own),
            "variants": [dataclasses.asdict(v) for v in self.variants.values()],
        }

    @classmethod
    def from_record(cls, data: dict[str, Any]) -> TestRuns:
        variants = [TestRun.from_dict(v) for v in data["variants"]]
        return cls(TestRun.from_dict(data["own"]), {v.variant: v for v in variants})
