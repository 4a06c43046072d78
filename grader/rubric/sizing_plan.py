"""The sizing section's plan: the input sets a sizing command runs on, and one input moved at a time.

The public sets are the rubric's (`sizing.sets`); a grade adds the unseen ones
(grader/unseen/sizing_sets.yaml, never in a candidate's kit). `perturb` moves one input of the base
set at a time, so a command that ignores a flag is named. `argv` is how a set becomes flags.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from grader.shared.yaml_files import read_yaml

__all__ = ["HIDDEN_SETS", "Refusal", "SizingPlan", "argv"]

HIDDEN_SETS = Path(__file__).resolve().parents[1] / "unseen" / "sizing_sets.yaml"


@dataclass(frozen=True)
class Refusal:
    """Inputs a sizing command must refuse: the base set with one flag left out (`value` None) or set to a
    value out of its range (the contract: "exits non-zero with a message on stderr")."""

    flag: str
    value: Any = None

    @property
    def name(self) -> str:
        return f"no --{self.flag}" if self.value is None else f"--{self.flag} {self.value}"

    def flags(self, base: dict[str, Any]) -> dict[str, Any]:
        if self.value is None:
            return {k: v for k, v in base.items() if k != self.flag}
        return {**base, self.flag: self.value}

    @classmethod
    def from_dict(cls, raw: dict[str, Any]) -> Refusal:
        return cls(str(raw["flag"]), raw.get("value"))


@dataclass(frozen=True)
class SizingPlan:
    """The input sets a sizing command runs on, the values that move one input of the base set at a time,
    and the inputs it must refuse."""

    sets: dict[str, dict[str, Any]]
    perturb_base: str
    perturb: dict[str, Any]
    unseen: tuple[str, ...] = ()  # the names of the unseen sets among `sets`
    refuse: tuple[Refusal, ...] = ()

    @classmethod
    def from_rubric(cls, data: dict[str, Any]) -> SizingPlan:
        return cls(
            {k: dict(v) for k, v in data["sets"].items()},
            str(data["perturb_base"]),
            dict(data["perturb"]),
            refuse=tuple(Refusal.from_dict(r) for r in data.get("refuse") or ()),
        )

    def problems(self) -> list[str]:
        out = [] if self.perturb_base in self.sets else [f"perturb_base: no set named {self.perturb_base!r}"]
        base = self.sets.get(self.perturb_base, {})
        out += [f"perturb: moves no input {flag!r} of its base" for flag in base if flag not in self.perturb]
        out += [
            f"refuse[{i}].flag: {r.flag!r} is no input of the base set {self.perturb_base!r}"
            for i, r in enumerate(self.refuse)
            if r.flag not in base and r.flag not in self.perturb
        ]
        return out

    def with_hidden(self, path: Path = HIDDEN_SETS) -> SizingPlan:
        """These sets and the unseen ones (raises ValueError naming the file and field when they do not fit);
        unchanged when the file is not there (a candidate's kit)."""
        if not path.is_file():
            return self
        data = read_yaml(path)
        hidden = data.get("sets") if isinstance(data, dict) else None
        if not isinstance(hidden, dict) or not hidden:
            raise ValueError(f"{path}: sets: the unseen input sets, by name")
        if twice := sorted(set(hidden) & set(self.sets)):
            raise ValueError(f"{path}: sets.{twice[0]}: the rubric has a public set of that name")
        try:
            refuse = tuple(Refusal.from_dict(r) for r in data.get("refuse") or ())
        except (KeyError, TypeError, AttributeError):
            raise ValueError(f"{path}: refuse: a list of {{flag: NAME}} or {{flag: NAME, value: VALUE}}") from None
        plan = SizingPlan(
            {**self.sets, **hidden},
            str(data.get("perturb_base", self.perturb_base)),
            self.perturb,
            tuple(hidden),
            self.refuse + refuse,
        )
        if problems := plan.problems():
            raise ValueError(f"{path}: {problems[0]}")
        return plan


def argv(flags: dict[str, Any]) -> list[str]:
    """Flags as appended to the command: a list repeats its flag; None leaves the flag out."""
    out: list[str] = []
    for name, value in flags.items():
        for item in value if isinstance(value, list) else [value]:
            if item is not None:
                out += [f"--{name}", str(item)]
    return out
