"""The live exercises of the second stage, read from grader/unseen/live.yaml: the pool `grader live` draws from.

A live exercise is what the grade never ran, put in front of the candidate's own code during the follow-up
interview: a load-generator scenario, or a few gateway cases with the gateway's config and servers changed,
each with the criteria that judge it and a time box of at most ten minutes. It reuses the grade's engine
whole: `exercise_rubric` makes a rubric of the kit's one with the exercise's scenario (or gateway cases) and
criteria in place of the grade's, so the run is made, recorded, judged and re-judged as a grade's is.

Unseen material like the variants: it ships with the grader, never with the candidate's bundle, and no
grade runs it. Without the file (a candidate's kit) there is no pool.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from grader.rubric.gateway_plan import Case
from grader.rubric.load import DEFAULT_RUBRIC
from grader.shared.kit_files import schemas_dir
from grader.shared.schema_words import schema_problems
from grader.shared.yaml_files import YamlError, read_yaml

__all__ = ["POOL_FILE", "Exercise", "LivePool", "LivePoolError", "exercise_rubric", "kit_rubric_data", "load_pool"]

POOL_FILE = Path(__file__).resolve().parents[1] / "unseen" / "live.yaml"
#: The grade's start-up case, which every gateway exercise opens with (the gateway answers /health and /stats).
STARTUP = "startup"


class LivePoolError(ValueError):
    """The pool cannot be used: unreadable, off its schema, or naming what the rubric does not have; the message
    names the file and the field, one problem a line."""


@dataclass(frozen=True)
class Exercise:
    name: str
    title: str
    deliverable: str  # loadgen | gateway
    time_box_min: float
    tell: str  # what to tell the candidate: what changed, never the answer
    watch_for: str  # what a good fix and a good explanation cover
    raw: dict[str, Any]  # the entry as written (its scenario or gateway block, its criteria)

    @property
    def criteria(self) -> tuple[str, ...]:
        return tuple(str(c["id"]) for c in self.raw["criteria"])

    @property
    def cases(self) -> tuple[Case, ...]:
        """A gateway exercise's cases, in the order they run (after the grade's start-up case)."""
        return tuple(Case.from_dict(c) for c in (self.raw.get("gateway") or {}).get("cases", ()))


@dataclass(frozen=True)
class LivePool:
    path: Path
    criteria: dict[str, dict[str, Any]]  # the live-only checks' entries, by id
    exercises: dict[str, Exercise]

    def exercise(self, name: str) -> Exercise:
        if name not in self.exercises:
            raise LivePoolError(f"{name}: no such live exercise (known: {', '.join(self.exercises)})")
        return self.exercises[name]


def kit_rubric_data() -> dict[str, Any]:
    """The kit rubric's data as rubric.yaml has it (an exercise's rubric is made from it)."""
    data: dict[str, Any] = read_yaml(DEFAULT_RUBRIC)
    return data


def _steps(path: str) -> list[str | int]:
    return [int(p) if p.isdigit() else p for p in path.split(".")]


def _set(target: Any, path: str, value: Any) -> None:
    """Set an existing setting at a dotted path (KeyError/IndexError/TypeError when it is not there)."""
    *parents, last = _steps(path)
    for step in parents:
        target = target[step]
    target[last]  # an exercise changes the grade's settings; it never invents one
    target[last] = value


def load_pool(kit: dict[str, Any], path: Path = POOL_FILE) -> LivePool | None:
    """The pool at `path`, checked against its schema and against `kit` (the kit rubric's data, as read from
    rubric.yaml); None when there is no pool (a candidate's kit)."""
    if not path.is_file():
        return None
    try:
        data = read_yaml(path)
    except YamlError as exc:
        raise LivePoolError(str(exc)) from None
    problems = schema_problems(schemas_dir() / "grader" / "live-pool.schema.json", data)
    if problems:
        raise LivePoolError("\n".join(f"{path}: {p}" for p in problems))
    known = {c["id"]: c for c in kit["criteria"]}
    exercises = {}
    for name, raw in data["exercises"].items():
        where = f"{path}: exercises.{name}"
        problems += _exercise_problems(where, raw, known, data["criteria"], kit)
        exercises[name] = Exercise(
            name,
            raw["title"],
            raw["deliverable"],
            float(raw["time_box_min"]),
            raw["tell"].strip(),
            raw["watch_for"].strip(),
            raw,
        )
    problems += [
        f"{path}: criteria.{cid}: the rubric has this id; a live check needs one of its own"
        for cid in data["criteria"]
        if cid in known
    ]
    if problems:
        raise LivePoolError("\n".join(problems))
    return LivePool(path, dict(data["criteria"]), exercises)


def _exercise_problems(
    where: str, raw: dict[str, Any], known: dict[str, Any], live: dict[str, Any], kit: dict[str, Any]
) -> list[str]:
    out = []
    deliverable = raw["deliverable"]
    names: list[str] = []
    if deliverable == "gateway":
        block = raw["gateway"]
        for field, base in (("config", kit["gateway"]["config"]), ("servers", kit["gateway"]["servers"])):
            probe = copy.deepcopy(base)
            for setting, value in (block.get(field) or {}).items():
                try:
                    _set(probe, setting, value)
                except (KeyError, IndexError, TypeError):
                    out.append(f"{where}.gateway.{field}.{setting}: no such setting in the grade's gateway")
        for i, case in enumerate(block["cases"]):
            try:
                parsed = Case.from_dict(case)
            except (KeyError, TypeError) as exc:
                out.append(f"{where}.gateway.cases[{i}]: not a case ({exc})")
                continue
            if parsed.name == STARTUP or parsed.name in names:
                out.append(f"{where}.gateway.cases[{i}].name: {parsed.name!r} is taken")
            if (
                parsed.quiet_probe
                or parsed.stop_local
                or parsed.kind not in ("one", "recover", "require-bad", "require-null")
            ):
                out.append(
                    f"{where}.gateway.cases[{i}]: a live case is sent to one start of the gateway, which the "
                    "candidate may run by hand: no stopped server, no start of its own, no concurrent kind"
                )
            names.append(parsed.name)
    for i, entry in enumerate(raw["criteria"]):
        cid = entry["id"]
        base = known.get(cid) or live.get(cid)
        if base is None:
            out.append(f"{where}.criteria[{i}].id: {cid!r} is neither a rubric criterion nor a live check")
        elif base["deliverable"] != deliverable:
            out.append(f"{where}.criteria[{i}].id: {cid} judges the {base['deliverable']} deliverable")
        if deliverable == "loadgen" and entry.get("cases"):
            out.append(f"{where}.criteria[{i}].cases: a load-generator exercise has a scenario, not cases")
        for case in entry.get("cases") or ():
            if case not in names:
                out.append(f"{where}.criteria[{i}].cases: {case!r} is not one of the exercise's cases")
    return out


def exercise_rubric(pool: LivePool, name: str, kit: dict[str, Any]) -> dict[str, Any]:
    """A rubric's data for one exercise: the kit's (its judging, limits and sizing as they are), with the
    exercise's scenario, or its gateway (the grade's start-up case, then its own cases, on its config and
    servers), and only its criteria, each as the rubric has it but judged on the exercise's runs."""
    exercise = pool.exercise(name)
    out = copy.deepcopy({k: kit[k] for k in ("rubric", "judging", "limits", "sizing", "gateway")})
    out["scenarios"] = {}
    if exercise.deliverable == "loadgen":
        out["scenarios"][name] = copy.deepcopy(exercise.raw["scenario"])
    else:
        block = exercise.raw["gateway"]
        gateway = out["gateway"]
        for setting, value in (block.get("config") or {}).items():
            _set(gateway["config"], setting, value)
        for setting, value in (block.get("servers") or {}).items():
            _set(gateway["servers"], setting, value)
        gateway.update(block.get("plan") or {})
        startup = [c for c in gateway["cases"] if c.get("kind") == STARTUP]
        gateway["cases"] = startup + copy.deepcopy(block["cases"])
    criteria = []
    for entry in exercise.raw["criteria"]:
        cid = entry["id"]
        kept = next((c for c in kit["criteria"] if c["id"] == cid), None)
        base = copy.deepcopy(kept) if kept is not None else {"id": cid, **copy.deepcopy(pool.criteria[cid])}
        base.setdefault("visibility", "public")  # the report of a live run is the interviewer's
        base.pop("scenario", None)
        base.pop("cases", None)
        if exercise.deliverable == "loadgen":
            base["scenario"] = name
        elif entry.get("cases"):
            base["cases"] = list(entry["cases"])
        criteria.append(base)
    out["criteria"] = criteria
    return out
