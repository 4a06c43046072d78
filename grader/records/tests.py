"""The candidate's tests' run record: the test command on the candidate's own code, and once per broken variant."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Any

__all__ = [
    "DRAWN_NO_SLOTS",
    "DRAWN_SERVER",
    "NO_SLOTS",
    "PERCENTILE_METHODS",
    "UNSEEN_PERCENTILE",
    "TestRun",
    "TestRuns",
]

#: The wrong percentile methods swapped in for the candidate's function, one run each: the brief names these.
PERCENTILE_METHODS = ("linear", "floor", "off-by-one", "unsorted")
#: How a run of a wrong method the brief does not name is called, before the method's name (grader/unseen/).
UNSEEN_PERCENTILE = "unseen percentile: "
#: The run with the fake server's slot limit removed (published), and the two against drawn servers (a grade's own):
#: the slot tests alone, against servers whose slots and token rate are drawn, then with the slot limit removed too.
NO_SLOTS = "no slot limit"
DRAWN_SERVER = "drawn server"
DRAWN_NO_SLOTS = "drawn server, no slot limit"


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
        """Whether the runs of a variant kind ("percentile", "slots", "drawn-slots") were made. The drawn servers'
        runs are a grade's alone (a self-check has none) and follow the slot-limit run: that one is what is needed."""
        names = [f"percentile: {m}" for m in PERCENTILE_METHODS] if variant == "percentile" else [NO_SLOTS]
        return all(name in self.variants for name in names)

    @property
    def slot_tests(self) -> list[str]:
        """The tests that passed on the candidate's code and failed with the slot limit removed: its slot tests."""
        no_slots = self.variants.get(NO_SLOTS)
        if no_slots is None or no_slots.killed:
            return []
        return [t for t in no_slots.failed if self.own.tests.get(t) == "passed"]

    def to_record(self) -> dict[str, Any]:
        return {
            "own": dataclasses.asdict(self.own),
            "variants": [dataclasses.asdict(v) for v in self.variants.values()],
        }

    @classmethod
    def from_record(cls, data: dict[str, Any]) -> TestRuns:
        variants = [TestRun.from_dict(v) for v in data["variants"]]
        return cls(TestRun.from_dict(data["own"]), {v.variant: v for v in variants})
