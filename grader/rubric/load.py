"""The rubric: which criteria a grade has, what each weighs, who sees it, what it runs and its numbers.

`grader/rubric/rubric.yaml` is the default; a hiring team changes weights, visibility and tolerances there
or in an override file (`grader grade --override FILE`), which only touches criteria (and numbers)
the rubric already has. Both are checked against their schemas in `schemas/grader/`, and then
against the checks a grade will judge with (`checks`: the criteria registry, which the caller hands
in, since the rubric's data sits below the code that judges it): a criterion with no check, or whose
check needs a number its entry does not give, stops the load with the criterion named. Every
problem is reported with the file and the field, never as a traceback.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Protocol

from fake_server import SettingsError, fill_settings
from grader.rubric.editions import EditionError, with_edition
from grader.rubric.files import DEFAULT_RUBRIC
from grader.rubric.gateway_plan import GatewayPlan, PlanError, read_plan
from grader.rubric.sizing_plan import SizingPlan
from grader.shared.contracts import DEFAULT_EDITION, LATEST, supported
from grader.shared.kit_files import schemas_dir
from grader.shared.schema_words import schema_problems
from grader.shared.yaml_files import YamlError, read_yaml

__all__ = [
    "DEFAULT_RUBRIC",
    "CheckNeeds",
    "Criterion",
    "Judging",
    "Rubric",
    "RubricError",
    "Scenario",
    "TimeLimits",
    "load_rubric",
]

#: Each section's time limits, by name (the rubric's `limits:`; schemas/grader/rubric.schema.json says which).
TimeLimits = dict[str, dict[str, float]]


class CheckNeeds(Protocol):
    """What the rubric needs to know of a registered check: the deliverable it judges, the numbers it reads."""

    @property
    def deliverable(self) -> str: ...
    @property
    def needs(self) -> tuple[str, ...]: ...


class RubricError(ValueError):
    """The rubric or an override is unreadable, breaks its schema or the registry; the message says where."""


@dataclass(frozen=True)
class Scenario:
    name: str
    description: str
    server: dict[str, Any]  # fake-server settings
    loadgen: dict[str, Any]  # requests, concurrency, prompt_tokens, max_tokens (ints); timeout_s (seconds), if given
    since: int = 1  # the first contract version whose brief asks for what it runs

    def to_dict(self) -> dict[str, Any]:
        out = {"name": self.name, "description": self.description, "server": self.server, "loadgen": self.loadgen}
        return out | ({"since": self.since} if self.since > 1 else {})

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Scenario:
        return cls(
            data["name"], data["description"], dict(data["server"]), dict(data["loadgen"]), int(data.get("since", 1))
        )


def _number_text(name: str, value: float) -> str:
    if name == "rel":
        return f"{value * 100:g}%"
    if name.endswith("_ratio"):
        return f"{name[:-6].replace('_', ' ')} x{value:g}"
    if name.endswith("_count"):
        return f"{name[:-6].replace('_', ' ')} {value:g}"
    if name == "abs_s":
        return f"{value * 1000:g} ms"
    return f"{name[:-2].replace('_', ' ')} {value * 1000:g} ms"


@dataclass(frozen=True)
class Criterion:
    id: str
    deliverable: str
    weight: float
    visibility: str
    text: str
    scenarios: tuple[str, ...] = ()  # load-generator scenarios it is judged from
    cases: tuple[str, ...] = ()  # gateway cases it is judged from (none named: every case)
    variants: tuple[str, ...] = ()  # the broken variants the candidate's tests run against
    tolerance: dict[str, float] = field(default_factory=dict)  # every number its check reads, by name
    anchors: tuple[str, ...] = ()  # the statements of starter/TASK.md it checks (grader/kit/traceability.py)
    since: int = 1  # the first contract version whose brief states it
    # the criterion as an earlier brief gave it, by contract version: its text, tolerance, scenarios or cases
    earlier: Mapping[int, Mapping[str, Any]] = field(default_factory=dict)
    in_brief: bool = True  # False: the brief this grade follows does not state it (Rubric.for_contract)

    def tol(self, name: str) -> float:
        """A number of the entry's; the registry made sure at load time that the entry gives it."""
        return self.tolerance[name]

    @property
    def abs_s(self) -> float | None:
        return self.tolerance.get("abs_s")

    @property
    def rel(self) -> float | None:
        return self.tolerance.get("rel")

    @property
    def tolerance_text(self) -> str:
        return " / ".join(_number_text(k, v) for k, v in self.tolerance.items())

    @property
    def runs_from(self) -> tuple[str, ...]:
        """What it is judged from, named for a person: its scenarios or its cases."""
        return self.scenarios or self.cases

    def as_in(self, contract: int) -> Criterion:
        """The criterion as contract `contract`'s brief gave it: the meaning of the earliest version at or after it
        that says otherwise, or its own; out of that brief altogether when it came later."""
        if contract < self.since:
            return replace(self, in_brief=False)
        version = min((v for v in self.earlier if v >= contract), default=None)
        if version is None:
            return self
        then = self.earlier[version]
        return replace(
            self,
            text=str(then.get("text", self.text)).strip(),
            tolerance={**self.tolerance, **{k: float(v) for k, v in (then.get("tolerance") or {}).items()}},
            scenarios=_names(then["scenario"]) if "scenario" in then else self.scenarios,
            cases=_names(then["cases"]) if "cases" in then else self.cases,
            variants=tuple(then["variants"]) if "variants" in then else self.variants,
        )


@dataclass(frozen=True)
class Judging:
    """How a margin is read: the band that earns a rerun, quiet and busy, and the lag that makes a machine busy."""

    borderline: tuple[float, float]
    busy_borderline: tuple[float, float]
    loadgen_busy_lag_s: float  # a load-generator run whose server steps ran this late was on a busy machine
    lone_outlier: float  # a per-request check failed by one request alone, the rest within this: borderline
    cpu_waiting: float  # a run for more than this share of whose time some task waited for a core: a busy machine


@dataclass(frozen=True)
class Rubric:
    path: Path
    judging: Judging
    limits: TimeLimits
    scenarios: dict[str, Scenario]
    gateway: GatewayPlan
    sizing: SizingPlan  # the public input sets (a grade adds the unseen ones)
    criteria: tuple[Criterion, ...]
    contract: int = LATEST  # the contract version whose brief these criteria, scenarios and cases follow
    edition: str = DEFAULT_EDITION  # whose published numbers it holds (grader/rubric/editions.py)
    # the override and the checks it was loaded with, to load it again in another edition
    loaded_with: tuple[Path | None, Mapping[str, CheckNeeds] | None] = field(default=(None, None), compare=False)

    def for_grade(self, index: Mapping[str, Any]) -> Rubric:
        """The rubric as the brief a recorded grade followed has it: its run index's edition names the edition and
        the contract (a grade recorded before editions followed the default edition and the kit's latest)."""
        edition = index.get("edition") or {}
        return self.for_edition(str(edition.get("name") or DEFAULT_EDITION)).for_contract(
            int(edition.get("contract") or self.contract)
        )

    def for_edition(self, name: str) -> Rubric:
        """The same rubric with edition `name`'s published numbers (raises RubricError for a name that is none)."""
        if name == self.edition:
            return self
        override, checks = self.loaded_with
        again = load_rubric(self.path, override=override, checks=checks, edition=name)
        return again.for_contract(self.contract)

    def for_contract(self, contract: int) -> Rubric:
        """The rubric as contract `contract`'s brief has it: only the scenarios and gateway cases that brief asks
        for, each criterion with the meaning that brief gave it and judged from those runs alone, and a criterion
        it does not state (or whose every run came later) kept, marked out of the brief (`in_brief`)."""
        if contract == self.contract:
            return self
        scenarios = {name: s for name, s in self.scenarios.items() if s.since <= contract}
        plan = replace(
            self.gateway, cases=tuple(c for c in self.gateway.cases if c.since <= contract), contract=contract
        )
        case_names = {c.name for c in plan.cases}
        criteria = []
        for criterion in self.criteria:
            then = criterion.as_in(contract)
            names = tuple(n for n in then.scenarios if n in scenarios)
            cases = tuple(n for n in then.cases if n in case_names)
            lost = bool(then.scenarios and not names) or bool(then.cases and not cases)
            criteria.append(replace(then, scenarios=names, cases=cases, in_brief=then.in_brief and not lost))
        return replace(self, scenarios=scenarios, gateway=plan, criteria=tuple(criteria), contract=contract)

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


def _read(path: Path, schema: str) -> Any:
    try:
        data = read_yaml(path)
    except YamlError as exc:
        raise RubricError(str(exc)) from None
    problems = schema_problems(schemas_dir() / "grader" / f"{schema}.schema.json", data)
    if problems:
        raise RubricError(f"{path}:\n  " + "\n  ".join(problems))
    return data


def _names(value: Any) -> tuple[str, ...]:
    return (value,) if isinstance(value, str) else tuple(value or ())


def load_rubric(
    path: Path | None = None,
    *,
    override: Path | None = None,
    checks: Mapping[str, CheckNeeds] | None = None,
    edition: str = DEFAULT_EDITION,
) -> Rubric:
    """The rubric at `path` (default: the kit's), with an override file's weights, visibility and tolerances,
    and edition `edition`'s published numbers (grader/rubric/editions.py); held to `checks` (the criteria
    registry, by criterion id) when they are given."""
    path = Path(path) if path else DEFAULT_RUBRIC
    try:
        data = with_edition(_read(path, "rubric"), edition)
    except EditionError as exc:
        raise RubricError(str(exc)) from None
    scenarios = _scenarios(path, data["scenarios"])
    try:
        plan = read_plan(data["gateway"])
    except PlanError as exc:
        raise RubricError(f"{path}: gateway: {exc}") from None
    sizing = SizingPlan.from_rubric(data["sizing"])
    if problems := sizing.problems():
        raise RubricError(f"{path}: sizing.{problems[0]}")
    criteria = _criteria(path, data["criteria"], scenarios, {c.name for c in plan.cases})
    if override is not None:
        criteria = _apply_override(criteria, Path(override))
    if checks is not None:
        _check_registry(criteria, checks, override or path)
    judging = data["judging"]
    limits = {section: {k: float(v) for k, v in numbers.items()} for section, numbers in data["limits"].items()}
    return Rubric(
        path,
        Judging(
            tuple(judging["borderline"]),
            tuple(judging["busy_borderline"]),
            float(judging["loadgen_busy_lag_s"]),
            float(judging["lone_outlier"]),
            float(judging["cpu_waiting"]),
        ),
        limits,
        scenarios,
        plan,
        sizing,
        tuple(criteria),
        edition=edition,
        loaded_with=(override, checks),
    )


def _scenarios(path: Path, raw: dict[str, Any]) -> dict[str, Scenario]:
    """The published scenarios, each description written from its own settings."""
    scenarios = {}
    for name, s in raw.items():
        try:
            description = fill_settings(s["description"], s)
        except SettingsError as exc:
            raise RubricError(f"{path}: scenarios.{name}.description: {exc} of the scenario") from None
        scenarios[name] = Scenario(name, description, dict(s["server"]), dict(s["loadgen"]), int(s.get("since", 1)))
    return scenarios


def _criteria(
    path: Path, raw: list[dict[str, Any]], scenarios: dict[str, Scenario], cases: set[str]
) -> list[Criterion]:
    """The criteria, every name they use checked against the scenarios and cases there are (all problems at once)."""
    criteria: list[Criterion] = []
    problems = []
    for i, entry in enumerate(raw):
        names = _names(entry.get("scenario"))
        if names == ("*",):  # every scenario's run
            names = tuple(scenarios)
        problems += [f"criteria[{i}].scenario: no scenario named {n!r}" for n in names if n not in scenarios]
        problems += [
            f"criteria[{i}].cases: no gateway case named {n!r}" for n in _names(entry.get("cases")) if n not in cases
        ]
        if entry["id"] in {c.id for c in criteria}:
            problems.append(f"criteria[{i}].id: {entry['id']!r} appears twice")
        earlier = {int(v): dict(then) for v, then in (entry.get("earlier") or {}).items()}
        problems += _earlier_problems(f"criteria[{i}]", earlier, scenarios, cases)
        criteria.append(
            Criterion(
                entry["id"],
                entry["deliverable"],
                float(entry["weight"]),
                entry["visibility"],
                entry["text"].strip(),
                names,
                _names(entry.get("cases")),
                tuple(entry.get("variants", ())),
                {k: float(v) for k, v in (entry.get("tolerance") or {}).items()},
                tuple(entry.get("anchors", ())),
                int(entry.get("since", 1)),
                earlier,
            )
        )
    if problems:
        raise RubricError(f"{path}:\n  " + "\n  ".join(problems))
    return criteria


def _earlier_problems(
    where: str, earlier: dict[int, dict[str, Any]], scenarios: dict[str, Scenario], cases: set[str]
) -> list[str]:
    """What is wrong with a criterion's earlier meanings: a version never issued (or the latest), a run not there."""
    problems = []
    for version, then in earlier.items():
        if version not in supported() or version >= LATEST:
            problems.append(f"{where}.earlier.{version}: not an earlier contract version")
        problems += [
            f"{where}.earlier.{version}.scenario: no scenario named {n!r} (an earlier meaning names each)"
            for n in _names(then.get("scenario"))
            if n not in scenarios
        ]
        problems += [
            f"{where}.earlier.{version}.cases: no gateway case named {n!r}"
            for n in _names(then.get("cases"))
            if n not in cases
        ]
    return problems


def _check_registry(criteria: list[Criterion], checks: Mapping[str, CheckNeeds], path: Path) -> None:
    """Every criterion has a registered check of its deliverable, and gives every number that check reads."""
    problems = []
    for c in criteria:
        check = checks.get(c.id)
        if check is None:
            problems.append(f"{c.id}: no check is registered under this id")
        elif check.deliverable != c.deliverable:
            problems.append(
                f"{c.id}: its check judges the {check.deliverable} deliverable, the entry says {c.deliverable}"
            )
        elif missing := [n for n in check.needs if n not in c.tolerance]:
            problems.append(f"{c.id}: tolerance: its check needs {', '.join(missing)}, which the entry does not give")
    if problems:
        raise RubricError(f"{path}:\n  " + "\n  ".join(problems))


def _apply_override(criteria: list[Criterion], path: Path) -> list[Criterion]:
    changes = _read(path, "rubric-override")["criteria"]
    known = {c.id for c in criteria}
    unknown = sorted(set(changes) - known)
    if unknown:
        raise RubricError(
            f"{path}: criteria.{unknown[0]}: the rubric has no such criterion"
            + (f" (and {len(unknown) - 1} more)" if len(unknown) > 1 else "")
        )
    out = []
    for c in criteria:
        change = dict(changes.get(c.id, {}))
        tolerance = change.pop("tolerance", {})
        if extra := sorted(set(tolerance) - set(c.tolerance)):
            raise RubricError(
                f"{path}: criteria.{c.id}.tolerance.{extra[0]}: the criterion's entry gives no such number "
                f"(it gives {', '.join(c.tolerance) or 'none'})"
            )
        values: dict[str, Any] = {k: (float(v) if k == "weight" else v) for k, v in change.items()}
        out.append(replace(c, **values, tolerance={**c.tolerance, **{k: float(v) for k, v in tolerance.items()}}))
    return out
