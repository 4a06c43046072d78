"""Unseen variants: each public scenario and gateway case again, with its settings drawn within ranges.

A candidate self-checks against the public scenarios; nothing stops a solution from fitting their
constants (the position of a cut, a stall's length, a slot count, a timeout) instead of following
the definitions. The grade also runs variants (grader/unseen/variants.yaml, never in the
candidate's kit): the same scenario with its listed settings drawn afresh from a seeded generator,
so a grade is repeatable and a fitted solution fails where a correct one does not. A criterion is
judged on its public runs and on its variants apart (grading/judging.py); the candidate is told
only whether unseen variants passed, the hiring team sees their evidence.

Names: the variant `i` of scenario `cut` is `cut.v1`, its record `loadgen/cut.v1`; the gateway's
is `gateway.v1`.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from grader.rubric import Criterion, Rubric, Scenario
from grader.rubric.draws import DrawError, drawn, get_path, problem_of
from grader.rubric.gateway_plan import TOLD, Case, GatewayPlan, PlanError, read_plan, serving_as_told
from grader.shared.yaml_files import YamlError, read_yaml

__all__ = [
    "VARIANTS_FILE",
    "Variants",
    "VariantsError",
    "gateway_criterion",
    "is_variant_name",
    "load_variants",
    "variant_name",
]

VARIANTS_FILE = Path(__file__).resolve().parents[1] / "unseen" / "variants.yaml"
WRONG_PERCENTILES_FILE = VARIANTS_FILE.with_name("wrong_percentiles.yaml")

Draws = Mapping[str, Any]  # a dotted path -> its draw ([lo, hi] or {one_of: [...]})


class VariantsError(ValueError):
    """The variants file cannot be used; the message names the file and the field."""


def variant_name(name: str, i: int) -> str:
    return f"{name}.v{i}"


def is_variant_name(name: str) -> bool:
    """Whether a scenario, run or record key (`baseline.v1`, `loadgen/baseline.v1@2`, `gateway.v1`) is an
    unseen variant's, as `variant_name` writes them."""
    return ".v" in name


def _what_changed(values: dict[str, Any], draws: Draws) -> str:
    """The drawn settings, for the hiring team's evidence: `server.faults.0.status 504, ...`."""
    return ", ".join(f"{path} {get_path(values, path)}" for path in sorted(draws)) or "no setting drawn"


def _rng(seed: int, name: str, i: int) -> random.Random:
    return random.Random(f"{seed}:{name}:{i}")  # a str seed is hashed with sha512: the same in every process


@dataclass(frozen=True)
class ExtraCase:
    """A case only variants run, judged by the criteria it names."""

    case: Case
    criteria: tuple[str, ...]
    draw: Draws


@dataclass(frozen=True)
class Variants:
    count: int
    loadgen: dict[str, Draws]  # scenario name -> its draws
    gateway_config: Draws
    gateway_servers: Draws
    gateway_cases: dict[str, Draws]  # public case name -> its draws
    extra_cases: tuple[ExtraCase, ...]
    percentile_methods: int = 0  # unseen wrong percentile methods a grade swaps in for the candidate's
    wrong_percentiles: Mapping[str, str] = field(default_factory=dict)  # the pool: name -> a module defining `method`
    server_draw: bool = False  # whether the candidate's slot tests meet servers with drawn slots and token rate

    @property
    def varied(self) -> dict[str, Any]:
        """What the grade runs variants of (kept in the records' index, so a re-judge finds them)."""
        return {
            "count": self.count,
            "loadgen": sorted(self.loadgen),
            "gateway": bool(self.gateway_cases or self.extra_cases),
        }

    def percentile_methods_at(self, seed: int) -> dict[str, str]:
        """The unseen wrong percentile methods a grade at `seed` swaps in: name -> the module defining `method`."""
        names = sorted(self.wrong_percentiles)
        drawn = random.Random(f"{seed}:percentile-methods").sample(names, k=min(self.percentile_methods, len(names)))
        return {name: self.wrong_percentiles[name] for name in sorted(drawn)}

    def server_draw_at(self, seed: int) -> str | None:
        """The `FAKE_SERVER_DRAW` seed a grade at `seed` runs the candidate's slot tests with (None: no such runs)."""
        if not self.server_draw:
            return None
        return f"{random.Random(f'{seed}:server-draw').randrange(1, 10**9)}"

    def scenario(self, base: Scenario, i: int, seed: int) -> Scenario:
        """Variant `i` of a public scenario: its listed settings drawn."""
        draws = self.loadgen[base.name]
        public = {"server": base.server, "loadgen": base.loadgen}
        values = drawn(public, draws, _rng(seed, base.name, i), {"published": public})
        return Scenario(
            variant_name(base.name, i),
            f"an unseen variant of {base.name}, drawn: {_what_changed(values, draws)}",
            values["server"],
            values["loadgen"],
        )

    def gateway_plan(self, base: GatewayPlan, i: int, seed: int) -> GatewayPlan:
        """Variant `i` of the gateway plan: config and local server drawn, the listed cases (drawn) and the extra
        ones, after the startup case."""
        rng = _rng(seed, "gateway", i)
        public_servers = {"local": base.local_server, "api": base.api_server}
        published = {"published": {"config": base.config, "servers": public_servers}}
        config = drawn(base.config, self.gateway_config, rng, published)
        servers = drawn(public_servers, self.gateway_servers, rng, {**published, "config": config})
        setup = ", ".join(
            p
            for p in (
                _what_changed(config, self.gateway_config) if self.gateway_config else "",
                _what_changed(servers, self.gateway_servers) if self.gateway_servers else "",
            )
            if p
        )
        cases = [
            replace(c, what=f"{c.what} (an unseen variant; drawn: {setup or 'no setting'})")
            for c in base.cases
            if c.kind == "startup"
        ]
        varied = [(case, self.gateway_cases[case.name]) for case in base.cases if case.name in self.gateway_cases]
        extras = [(extra.case, extra.draw) for extra in self.extra_cases]
        # the cases that stop the local server last, as in the public plan (a stopped server stays stopped)
        ordered = sorted([*varied, *extras], key=lambda pair: pair[0].stop_local)
        for case, draws in ordered:
            values = drawn(case.to_dict(), draws, rng, {**published, "config": config, "servers": servers})
            values["what"] = f"{case.what} (an unseen variant; drawn: {_what_changed(values, draws)})"
            cases.append(Case.from_dict(values))
        # each server serves the drawn model its route names; the API takes the drawn key and bills the drawn prices
        local, api = serving_as_told(
            {k: v for k, v in servers["local"].items() if k not in TOLD},
            {k: v for k, v in servers["api"].items() if k not in TOLD},
            config,
        )
        return replace(base, config=config, local_server=local, api_server=api, cases=tuple(cases))


def gateway_criterion(criterion: Criterion, plan: GatewayPlan) -> Criterion | None:
    """The criterion as judged on a variant run of `plan`: its cases the variant ran, and the extra cases that
    name it. None when the variant covers none of its cases (a criterion of every case covers any run)."""
    if not criterion.cases:
        return criterion
    cases = tuple(n for n in criterion.cases if any(c.name == n for c in plan.cases))
    cases += tuple(c.name for c in plan.cases if criterion.id in c.criteria and c.name not in cases)
    return replace(criterion, cases=cases) if cases else None


class _Reader:
    """Reads a variants file, gathering every problem (each naming the file and field) to report them at once."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.problems: list[str] = []

    def where(self, field: str) -> str:
        return f"{self.path}: {field}"

    def problem(self, field: str) -> None:
        self.problems.append(self.where(field))

    def checked(self, field: str, base: Any, draws: Any) -> Draws:
        """`draws` (dotted setting -> draw), each a draw there is, of a setting `base` has."""
        if not isinstance(draws, dict):
            self.problem(f"{field}: a mapping of dotted settings to draws")
            return {}
        good = {}
        for setting, spec in draws.items():
            if why := problem_of(spec):
                self.problem(f"{field}.{setting}: {why}, not {spec!r}")
                continue
            try:
                get_path(base, str(setting))
            except (KeyError, IndexError, TypeError):
                self.problem(f"{field}.{setting}: no such setting in the public one")
                continue
            good[str(setting)] = spec
        return good


def load_variants(rubric: Rubric, path: Path = VARIANTS_FILE) -> Variants | None:
    """The variants in `path`, every setting checked against the public scenario it draws into; None when the
    file is not there (a candidate's kit)."""
    if not path.is_file():
        return None
    try:
        data = read_yaml(path)
    except YamlError as exc:
        raise VariantsError(str(exc)) from None
    read = _Reader(path)
    if not isinstance(data, dict) or not isinstance(data.get("count"), int) or data["count"] < 1:
        raise VariantsError(read.where("count: the number of variants of each scenario (an integer, at least 1)"))
    loadgen = _loadgen_draws(read, rubric, data.get("loadgen") or {})
    block = data.get("gateway") or {}
    plan = rubric.gateway
    config = read.checked("gateway.config", plan.config, block.get("config") or {})
    servers = read.checked(
        "gateway.servers", {"local": plan.local_server, "api": plan.api_server}, block.get("servers") or {}
    )
    cases = _case_draws(read, rubric, block.get("cases") or {})
    extras = _extra_cases(read, rubric, block.get("extra_cases") or ())
    tests = data.get("tests") or {}
    methods, pool = _percentile_methods(tests, read.problems, read.where)
    server_draw = tests.get("server_draw", False) if isinstance(tests, dict) else False
    if not isinstance(server_draw, bool):
        read.problem(f"tests.server_draw: true or false, got {server_draw!r}")
    if read.problems:
        raise VariantsError("\n".join(read.problems))
    variants = Variants(data["count"], loadgen, config, servers, cases, extras, methods, pool, server_draw)
    try:  # every draw can be made (a followed setting exists, a range leaves room), and the drawn plan is a plan
        for name in variants.loadgen:
            variants.scenario(rubric.scenarios[name], 1, 0)
        read_plan(variants.gateway_plan(plan, 1, 0).to_dict())
    except PlanError as exc:
        raise VariantsError(read.where(f"gateway: the drawn plan is not a plan: {exc}")) from None
    except (DrawError, KeyError, IndexError, TypeError) as exc:
        raise VariantsError(read.where(f"a draw cannot be made: {exc}")) from None
    return variants


def _loadgen_draws(read: _Reader, rubric: Rubric, block: dict[str, Any]) -> dict[str, Draws]:
    loadgen: dict[str, Draws] = {}
    for name, draws in block.items():
        if name not in rubric.scenarios:
            read.problem(f"loadgen.{name}: no such scenario in {rubric.path.name}")
            continue
        s = rubric.scenarios[name]
        loadgen[name] = read.checked(f"loadgen.{name}", {"server": s.server, "loadgen": s.loadgen}, draws)
    return loadgen


def _case_draws(read: _Reader, rubric: Rubric, block: dict[str, Any]) -> dict[str, Draws]:
    """The draws of the public gateway cases a variant runs (a case that stops the local server needs its own start)."""
    cases: dict[str, Draws] = {}
    for name, draws in block.items():
        public = next((c for c in rubric.gateway.cases if c.name == name), None)
        if public is None:
            read.problem(f"gateway.cases.{name}: no such case in {rubric.path.name}")
        elif public.stop_local and not public.quiet_probe:
            read.problem(
                f"gateway.cases.{name}: a case that stops the local server runs in a variant only in a start of its "
                "own (quiet_probe)"
            )
        else:
            cases[name] = read.checked(f"gateway.cases.{name}", public.to_dict(), draws or {})
    return cases


def _extra_cases(read: _Reader, rubric: Rubric, block: Any) -> tuple[ExtraCase, ...]:
    """The cases only variants run, each with the criteria that judge it."""
    extras: list[ExtraCase] = []
    known = {c.id for c in rubric.criteria}
    for i, raw in enumerate(block):
        field = f"gateway.extra_cases[{i}]"
        try:
            case = Case.from_dict(raw["case"])
        except (KeyError, TypeError) as exc:
            read.problem(f"{field}.case: not a case ({exc})")
            continue
        named = tuple(raw.get("criteria") or ())
        if not named or any(c not in known for c in named):
            read.problem(f"{field}.criteria: name the criteria of {rubric.path.name} that judge it")
        if any(c.name == case.name for c in rubric.gateway.cases):
            read.problem(f"{field}.case.name: {case.name!r} is a public case's name")
        draw = read.checked(f"{field}.draw", case.to_dict(), raw.get("draw") or {})
        extras.append(ExtraCase(replace(case, criteria=named), named, draw))
    return tuple(extras)


def _percentile_methods(block: Any, problems: list[str], where: Callable[[str], str]) -> tuple[int, dict[str, str]]:
    """How many unseen wrong percentile methods a grade draws, and the pool (WRONG_PERCENTILES_FILE) to draw from."""
    count = block.get("percentile_methods", 0) if isinstance(block, dict) else None
    if not isinstance(count, int) or isinstance(count, bool) or count < 0:
        problems.append(where("tests.percentile_methods: how many unseen wrong methods a grade draws (0 or more)"))
        return 0, {}
    if not count:
        return 0, {}
    try:
        pool = read_yaml(WRONG_PERCENTILES_FILE).get("methods")
    except YamlError as exc:
        problems.append(str(exc))
        return 0, {}
    if not isinstance(pool, dict) or not all(isinstance(v, str) and "def method(" in v for v in pool.values()):
        problems.append(f"{WRONG_PERCENTILES_FILE}: methods: each a module's source that defines `method`")
        return 0, {}
    if count > len(pool):
        problems.append(where(f"tests.percentile_methods: {count} asked, {len(pool)} in the pool"))
    return count, {str(k): v for k, v in pool.items()}
