"""Run the candidate's `sizing.command` on every input set, and on one input moved at a time.

Each set is sent as flags: the public ones of the rubric (`sizing.sets`) and, in a grade, the hidden
ones (grader/hidden/sizing_sets.yaml, never in a candidate's kit). The command must print one JSON
object.
When a set's output differs from the arithmetic for a criterion, the runs that diagnose it are
made too: one input of a base set moved at a time, so the criterion can name an input the command
ignores. A `SizingRuns` is the run record; criteria/sizing.py judges it.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from grader.contract import Submission, schema_errors
from grader.shared.yaml_files import read_yaml

__all__ = ["HIDDEN_SETS", "SizingPlan", "SizingRun", "SizingRuns", "argv", "load_sets", "run_set", "run_sizing"]

HIDDEN_SETS = Path(__file__).resolve().parents[1] / "hidden" / "sizing_sets.yaml"


@dataclass(frozen=True)
class SizingPlan:
    """The input sets a sizing command runs on, and the values that move one input of the base set at a time."""

    sets: dict[str, dict[str, Any]]
    perturb_base: str
    perturb: dict[str, Any]
    unseen: tuple[str, ...] = ()  # the names of the hidden sets among `sets`

    @classmethod
    def from_rubric(cls, data: dict[str, Any]) -> SizingPlan:
        return cls({k: dict(v) for k, v in data["sets"].items()}, str(data["perturb_base"]), dict(data["perturb"]))

    def problems(self) -> list[str]:
        out = [] if self.perturb_base in self.sets else [f"perturb_base: no set named {self.perturb_base!r}"]
        base = self.sets.get(self.perturb_base, {})
        out += [f"perturb: moves no input {flag!r} of its base" for flag in base if flag not in self.perturb]
        return out

    def with_hidden(self, path: Path = HIDDEN_SETS) -> SizingPlan:
        """These sets and the hidden ones (raises ValueError naming the file and field when they do not fit);
        unchanged when the file is not there (a candidate's kit)."""
        if not path.is_file():
            return self
        data = read_yaml(path)
        hidden = data.get("sets") if isinstance(data, dict) else None
        if not isinstance(hidden, dict) or not hidden:
            raise ValueError(f"{path}: sets: the hidden input sets, by name")
        if twice := sorted(set(hidden) & set(self.sets)):
            raise ValueError(f"{path}: sets.{twice[0]}: the rubric has a public set of that name")
        plan = SizingPlan(
            {**self.sets, **hidden}, str(data.get("perturb_base", self.perturb_base)), self.perturb, tuple(hidden)
        )
        if problems := plan.problems():
            raise ValueError(f"{path}: {problems[0]}")
        return plan


class Box(Protocol):
    def run(self, argv: list[str], *, timeout_s: float, files_back: list[str]) -> Any: ...


@dataclass
class SizingRun:
    """One run of the command on one set: its output, or why there is none."""

    name: str
    flags: dict[str, Any]
    output: dict[str, Any] | None
    problem: str  # empty when the output is a schema-valid object
    stderr_tail: str = ""
    wall_s: float = 0.0


@dataclass
class SizingRuns:
    """Every set's run, plus the perturbation runs (the base set with one input moved), by the flag moved."""

    runs: list[SizingRun]
    perturb_base: str
    perturb: dict[str, Any]
    extra: dict[str, SizingRun] = field(default_factory=dict)

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
        }

    @classmethod
    def from_record(cls, data: dict[str, Any]) -> SizingRuns:
        return cls(
            [SizingRun(**r) for r in data["sets"]],
            str(data["perturb_base"]),
            dict(data["perturb"]),
            {k: SizingRun(**r) for k, r in data["extra"].items()},
        )


def load_sets(path: Path = HIDDEN_SETS) -> tuple[dict[str, dict[str, Any]], str, dict[str, Any]]:
    """Every set a grade runs (the kit's rubric's and the hidden ones), its perturbation base and values."""
    from grader.grading.rubric import load_rubric

    plan = load_rubric().sizing.with_hidden(path)
    return plan.sets, plan.perturb_base, plan.perturb


def argv(flags: dict[str, Any]) -> list[str]:
    """Flags as appended to the command: a list repeats its flag; None leaves the flag out."""
    out: list[str] = []
    for name, value in flags.items():
        for item in value if isinstance(value, list) else [value]:
            if item is not None:
                out += [f"--{name}", str(item)]
    return out


def run_set(box: Box, submission: Submission, name: str, flags: dict[str, Any], *, timeout_s: float) -> SizingRun:
    """Run the command once; a crash, a hang or output that is not the contract's object is a problem."""
    done = box.run(submission.command("sizing") + argv(flags), timeout_s=timeout_s, files_back=[])
    tail = done.stderr_tail[-1500:].strip()
    if done.timed_out:
        return SizingRun(
            name, flags, None, f"hung: stopped after {timeout_s:g} s (the limit for one input set)", tail, done.wall_s
        )
    if done.killed:
        return SizingRun(name, flags, None, f"killed ({done.killed})", tail, done.wall_s)
    if done.exit_code != 0:
        return SizingRun(name, flags, None, f"exited {done.exit_code}", tail, done.wall_s)
    try:
        data = json.loads(done.stdout_tail)
    except ValueError as exc:
        first = done.stdout_tail.strip().splitlines()[:1]
        return SizingRun(
            name,
            flags,
            None,
            f"stdout is not one JSON object ({exc}); it begins {first[0][:80]!r}" if first else "stdout is empty",
            tail,
            done.wall_s,
        )
    problems = schema_errors("sizing-output", data)
    if problems:
        return SizingRun(
            name,
            flags,
            data if isinstance(data, dict) else None,
            "does not follow sizing-output.schema.json: " + "; ".join(problems[:3]),
            tail,
            done.wall_s,
        )
    return SizingRun(name, flags, data, "", tail, done.wall_s)


def run_sizing(
    box: Box,
    submission: Submission,
    diagnose: Iterable[tuple[str, float]],
    *,
    limits: dict[str, float],
    plan: SizingPlan,
) -> SizingRuns:
    """Every set's run (each stopped at the rubric's set_s; once hung runs have used budget_s, the rest are
    not run); then, for each (criterion, rel) in `diagnose` whose figures differ from the arithmetic on some
    set, the base set once per input that criterion's figures depend on, that input moved."""
    from grader.criteria.sizing import GROUPS, mismatched

    hung = 0.0

    def one(name: str, flags: dict[str, Any]) -> SizingRun:
        nonlocal hung
        if hung >= limits["budget_s"]:
            return SizingRun(name, flags, None, f"not run: the sizing command hung for {hung:.0f} s on earlier sets")
        run = run_set(box, submission, name, flags, timeout_s=limits["set_s"])
        hung += run.wall_s if run.problem.startswith("hung") else 0.0
        return run

    base, perturb = plan.perturb_base, plan.perturb
    runs = SizingRuns([one(name, flags) for name, flags in plan.sets.items()], base, perturb)
    if runs.base.output is None:
        return runs
    for criterion_id, rel in diagnose:
        if criterion_id in GROUPS and mismatched(runs, criterion_id, rel):
            for flag in GROUPS[criterion_id][1]:
                if flag not in runs.extra:
                    runs.extra[flag] = one(f"{base}+{flag}", {**runs.base.flags, flag: perturb[flag]})
    return runs
