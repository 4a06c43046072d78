"""The rubric: which criteria a grade has, what each weighs, who sees it, and its scenarios.

`grader/rubric.yaml` is the default; a hiring team changes weights and visibility there or in an
override file (`grader grade --rubric FILE`), which only touches criteria the rubric already has.
Both are checked against their schemas in `schemas/grader/`, and every problem is reported with the
file and the field, never as a traceback.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from jsonschema import Draft202012Validator

from grader.contract import ContractError, read_yaml
from grader.shared.kit_files import schemas_dir

__all__ = ["DEFAULT_RUBRIC", "Criterion", "Rubric", "RubricError", "Scenario", "load_rubric"]

DEFAULT_RUBRIC = Path(__file__).resolve().parents[1] / "rubric.yaml"
_SCHEMA_DIR = schemas_dir() / "grader"


class RubricError(ValueError):
    """The rubric or an override is unreadable or breaks its schema; the message says where."""


@dataclass(frozen=True)
class Scenario:
    name: str
    description: str
    server: dict[str, Any]  # fake-server settings
    loadgen: dict[str, int]  # requests, concurrency, prompt_tokens, max_tokens


@dataclass(frozen=True)
class Criterion:
    id: str
    deliverable: str
    weight: float
    visibility: str
    text: str
    scenarios: tuple[str, ...] = ()
    abs_s: float | None = None
    rel: float | None = None

    @property
    def tolerance_text(self) -> str:
        parts = []
        if self.abs_s is not None:
            parts.append(f"{self.abs_s * 1000:g} ms")
        if self.rel is not None:
            parts.append(f"{self.rel * 100:g}%")
        return " / ".join(parts)


@dataclass(frozen=True)
class Rubric:
    path: Path
    scenarios: dict[str, Scenario]
    criteria: tuple[Criterion, ...]

    def criterion(self, criterion_id: str) -> Criterion:
        for criterion in self.criteria:
            if criterion.id == criterion_id:
                return criterion
        raise KeyError(criterion_id)

    def select(self, only: tuple[str, ...] = ()) -> tuple[Criterion, ...]:
        """Criteria whose id or deliverable is in `only` (all of them when it is empty)."""
        if not only:
            return self.criteria
        unknown = [o for o in only if not any(o in (c.id, c.deliverable) for c in self.criteria)]
        if unknown:
            raise RubricError(f"--only {', '.join(unknown)}: no such criterion or deliverable in {self.path}")
        return tuple(c for c in self.criteria if c.id in only or c.deliverable in only)


def _schema_problems(name: str, data: Any) -> list[str]:
    schema = json.loads((_SCHEMA_DIR / f"{name}.schema.json").read_text(encoding="utf-8"))
    problems = []
    for error in sorted(Draft202012Validator(schema).iter_errors(data), key=lambda e: list(e.absolute_path)):
        where = ""
        for part in error.absolute_path:
            where += f"[{part}]" if isinstance(part, int) else (f".{part}" if where else str(part))
        problems.append(f"{where or '(top level)'}: {error.message}")
    return problems


def _read(path: Path, schema: str) -> Any:
    try:
        data = read_yaml(path)
    except ContractError as exc:
        raise RubricError(str(exc)) from None
    problems = _schema_problems(schema, data)
    if problems:
        raise RubricError(f"{path}:\n  " + "\n  ".join(problems))
    return data


def load_rubric(path: Path | None = None, *, override: Path | None = None) -> Rubric:
    """The rubric at `path` (default: the kit's), with an override file's weights and visibility."""
    path = Path(path) if path else DEFAULT_RUBRIC
    data = _read(path, "rubric")
    scenarios = {name: Scenario(name, s["description"], dict(s["server"]), dict(s["loadgen"]))
                 for name, s in data["scenarios"].items()}
    criteria: list[Criterion] = []
    problems = []
    for i, raw in enumerate(data["criteria"]):
        named = raw.get("scenario", ())
        names = (named,) if isinstance(named, str) else tuple(named)
        problems += [f"criteria[{i}].scenario: no scenario named {n!r}" for n in names if n not in scenarios]
        if raw["id"] in {c.id for c in criteria}:
            problems.append(f"criteria[{i}].id: {raw['id']!r} appears twice")
        tolerance = raw.get("tolerance", {})
        criteria.append(Criterion(raw["id"], raw["deliverable"], float(raw["weight"]), raw["visibility"],
                                  raw["text"].strip(), names, tolerance.get("abs_s"), tolerance.get("rel")))
    if problems:
        raise RubricError(f"{path}:\n  " + "\n  ".join(problems))
    if override is not None:
        criteria = _apply_override(criteria, Path(override))
    return Rubric(path, scenarios, tuple(criteria))


def _apply_override(criteria: list[Criterion], path: Path) -> list[Criterion]:
    changes = _read(path, "rubric-override")["criteria"]
    known = {c.id for c in criteria}
    unknown = sorted(set(changes) - known)
    if unknown:
        raise RubricError(f"{path}: criteria.{unknown[0]}: the rubric has no such criterion"
                          + (f" (and {len(unknown) - 1} more)" if len(unknown) > 1 else ""))
    out = []
    for c in criteria:
        values: dict[str, Any] = {k: (float(v) if k == "weight" else v) for k, v in changes.get(c.id, {}).items()}
        out.append(replace(c, **values))
    return out
