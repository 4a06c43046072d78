"""Sections of a grade: each deliverable's runs, registered once.

A section says how its runs are made and read back: which run records a criterion is judged from
(`keys`, by attempt: 2 is the rerun of a borderline answer; `variant_keys`, the unseen variants'
records, and `variant_criterion`, the criterion as judged on them), how one run is made in the sandbox
(`run`, returning the record's facts, and `expected_s`, how long that takes, so a replay making runs
at once starts the longest first), how a record becomes the facts its checks take (`load`,
`facts`), and whether the machine was too busy to trust a timing check (`busy`). Whether it gets
a sandbox of its own (`boxed`) and whether it has timing checks, so runs apart from the other
timed sections (`timed`), are part of it too. Grading and re-judging use the same sections.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass
from typing import Any

from grader.contract import Submission
from grader.criteria.busy import busy_from_cpu, busy_from_ledgers
from grader.criteria.loadgen.observed import observe
from grader.criteria.memo import facts_of
from grader.records.gateway import GatewayRun
from grader.records.keys import RunKey
from grader.records.loadgen import HUNG, LoadgenRun, not_run
from grader.records.manifests import ManifestsRun
from grader.records.memo import MemoRun
from grader.records.sizing import SizingRuns
from grader.records.tests import TestRuns
from grader.rubric import Criterion, Rubric, Scenario
from grader.rubric.durations import expected_s
from grader.rubric.sizing_plan import SizingPlan
from grader.rubric.variants import Variants, gateway_criterion
from grader.running.gateway import HangBudget, run_gateway
from grader.running.loadgen import run_loadgen
from grader.running.manifests import run_checker
from grader.running.memo import read_memo, with_sizing
from grader.running.sizing import run_set, run_sizing
from grader.running.tests import run_tests
from grader.sandbox.box_api import Box

__all__ = ["NO_VARIANTS", "SECTIONS", "Context", "Section", "Varied"]

#: What a grade ran unseen variants of (Variants.varied; kept in the records' index): their count, the
#: load-generator scenarios varied, and whether the gateway was.
Varied = dict[str, Any]
NO_VARIANTS: Varied = {"count": 0, "loadgen": [], "gateway": False}


@dataclass
class Context:
    """What a section's runs need: the submission, the rubric, the seed, the section's selected criteria
    and, for a boxed section, its sandbox (or a way to open one, for the memo's single sizing run)."""

    submission: Submission
    rubric: Rubric
    seed: int
    criteria: Sequence[Criterion]
    sizing: SizingPlan  # the input sets: the rubric's, and the unseen ones in a grade
    variants: Variants | None = None  # the unseen variants a grade runs (None: `grader check`, or a kit without)
    box: Box | None = None
    open_box: Callable[[], AbstractContextManager[Box]] | None = None
    hung_s: float = 0.0  # time the section's commands spent hanging, against the rubric's budget_s
    spread: int = 1  # runs made at once, each in a sandbox of its own (grading/section_runs.py; a replay's)

    def in_box(self) -> Box:
        """The section's box: asked for only by a boxed section's runs, which always have one."""
        assert self.box is not None, "a boxed section's run, with no box open"
        return self.box

    def budget_spent(self, section: str) -> str | None:
        """Why no more commands start in this section (its budget for commands that hang is spent), or None."""
        budget = self.rubric.limits[section]["budget_s"]
        if self.hung_s < budget:
            return None
        return (
            f"the {section} section's {budget:g} s for commands that hang were spent ({self.hung_s:.0f} s hung "
            "before this run), so it was not started"
        )


@dataclass(frozen=True)
class Section:
    name: str  # the deliverable
    part: str  # the part of submission.yaml it needs
    boxed: bool  # runs candidate code in a sandbox of its own
    timed: bool  # has timing checks: graded apart from the other timed sections (`--sandboxes`)
    keys: Callable[
        [Criterion, int], tuple[str, ...] | None
    ]  # records a criterion is judged from; None: no such attempt
    run: Callable[[Context, str], dict[str, Any]]  # make the run of one key: the record's facts
    load: Callable[[dict[str, Any]], Any]  # a record -> the object its checks read
    facts: Callable[
        [list[Any], Criterion], Any
    ]  # those objects -> the facts one check takes (None: they do not cover it)
    busy: Callable[[list[Any], Criterion, Rubric], str | None]  # why a timing check cannot be trusted, if so
    inherent: Callable[[Any], float]  # how long the candidate's own commands ran in one run
    # unseen variants: the records of a criterion's variants at an attempt (none: not varied), and the
    # criterion as judged on those runs (None: they do not cover it)
    variant_keys: Callable[[Criterion, int, Varied], tuple[str, ...]] = lambda criterion, attempt, varied: ()
    variant_criterion: Callable[[Criterion, list[Any]], Criterion | None] = lambda criterion, objects: criterion
    # how long one key's run is expected to take, so runs made at once start with the longest
    expected_s: Callable[[Context, str], float] = lambda ctx, key: 0.0
    # how long the runs a criterion read took (each shared run counted for every criterion that read it): its time
    own_s: Callable[[list[Any], Criterion], float] = lambda objects, criterion: 0.0


def _never_busy(objects: list[Any], criterion: Criterion, rubric: Rubric) -> str | None:
    return None


def _single(objects: list[Any], criterion: Criterion) -> Any:
    return objects[0]


def _once(section: str) -> Callable[[Criterion, int], tuple[str, ...] | None]:
    """A section that runs once for all its criteria and never reruns."""
    return lambda criterion, attempt: (str(RunKey(section)),) if attempt == 1 else None


# -- the load generator: one run per scenario; a borderline criterion reruns its scenarios -------


def _loadgen_keys(criterion: Criterion, attempt: int) -> tuple[str, ...]:
    return tuple(str(RunKey("loadgen", name, attempt=attempt)) for name in criterion.scenarios)


def _loadgen_variant_keys(criterion: Criterion, attempt: int, varied: Varied) -> tuple[str, ...]:
    return tuple(
        str(RunKey("loadgen", name, i, attempt))
        for name in criterion.scenarios
        if name in varied["loadgen"]
        for i in range(1, varied["count"] + 1)
    )


def _loadgen_scenario(ctx: Context, key: str) -> Scenario:
    """The scenario a key's run is made in: the rubric's, or its unseen variant."""
    run = RunKey.parse(key)
    scenario = ctx.rubric.scenarios[run.scenario]
    if run.is_variant:
        assert ctx.variants is not None, f"{key}: a variant's run, in a grade without variants"
        scenario = ctx.variants.scenario(scenario, run.variant, ctx.seed)
    return scenario


def _loadgen_run(ctx: Context, key: str) -> dict[str, Any]:
    run_key = RunKey.parse(key)
    scenario = _loadgen_scenario(ctx, key)
    if why := ctx.budget_spent("loadgen"):
        return not_run(scenario, ctx.seed, why, ctx.submission.command("loadgen")).to_record()
    run = run_loadgen(
        ctx.in_box(),
        ctx.submission,
        scenario,
        seed=ctx.seed,
        label=f"{run_key.name}-rerun" if run_key.is_rerun else run_key.name,
        limits=ctx.rubric.limits["loadgen"],
    )
    if run.killed == HUNG:
        ctx.hung_s += run.wall_s
    return run.to_record()


def _loadgen_busy(runs: list[LoadgenRun], criterion: Criterion, rubric: Rubric) -> str | None:
    return busy_from_ledgers([run.ledger for run in runs], limit_s=rubric.judging.loadgen_busy_lag_s) or busy_from_cpu(
        [run.cpu_waiting for run in runs], limit=rubric.judging.cpu_waiting
    )


LOADGEN = Section(
    "loadgen",
    "loadgen",
    boxed=True,
    timed=True,
    keys=_loadgen_keys,
    run=_loadgen_run,
    # the record, with the ledger's truth and the pairing its checks read (made by criteria/, not by the record)
    load=lambda record: observe(LoadgenRun.from_record(record)),
    facts=lambda runs, criterion: runs,
    busy=_loadgen_busy,
    inherent=lambda run: run.wall_s,
    variant_keys=_loadgen_variant_keys,
    expected_s=lambda ctx, key: expected_s(_loadgen_scenario(ctx, key)),
    own_s=lambda runs, criterion: sum(run.wall_s for run in runs),
)


# -- the candidate's tests: the own-code run and the variants the selected criteria need ------------


def _tests_keys(criterion: Criterion, attempt: int) -> tuple[str, ...]:
    return (str(RunKey("tests", attempt=attempt, criterion=criterion.id if attempt > 1 else "")),)


def _tests_run(ctx: Context, key: str) -> dict[str, Any]:
    rerun_of = RunKey.parse(key).criterion  # a rerun makes the runs of its one criterion again
    judged = [ctx.rubric.criterion(rerun_of)] if rerun_of else list(ctx.criteria)
    variants = tuple(dict.fromkeys(v for c in judged for v in c.variants))
    unseen = ctx.variants.percentile_methods_at(ctx.seed) if ctx.variants is not None else {}
    return run_tests(
        ctx.in_box(),
        ctx.submission,
        variants=variants,
        limits=ctx.rubric.limits["tests"],
        unseen_methods=unseen,
        server_draw=ctx.variants.server_draw_at(ctx.seed) if ctx.variants is not None else None,
    ).to_record()


def _tests_busy(objects: list[TestRuns], criterion: Criterion, rubric: Rubric) -> str | None:
    """A suite run on a machine too busy to keep time (its own-code run's CPU pressure): its timing tests may have
    failed for the machine's sake."""
    return busy_from_cpu([objects[0].own.cpu_waiting], limit=rubric.judging.cpu_waiting)


def _tests_facts(objects: list[TestRuns], criterion: Criterion) -> TestRuns | None:
    runs = objects[0]
    return runs if all(runs.has(v) for v in criterion.variants) else None


TESTS = Section(
    "tests",
    "loadgen",
    boxed=True,
    timed=True,
    keys=_tests_keys,
    run=_tests_run,
    load=TestRuns.from_record,
    facts=_tests_facts,
    busy=_tests_busy,
    inherent=lambda runs: runs.own.wall_s + sum(r.wall_s for r in runs.variants.values()),
    own_s=lambda objects, criterion: (
        objects[0].own.wall_s + sum(r.wall_s for name, r in objects[0].variants.items() if name in criterion.variants)
    ),
)


# -- the gateway: one run through every case the selected criteria need; a rerun per criterion ----


def _gateway_keys(criterion: Criterion, attempt: int) -> tuple[str, ...]:
    return (str(RunKey("gateway", attempt=attempt, criterion=criterion.id if attempt > 1 else "")),)


def _gateway_variant_keys(criterion: Criterion, attempt: int, varied: Varied) -> tuple[str, ...]:
    if not varied["gateway"]:
        return ()
    rerun_of = criterion.id if attempt > 1 else ""
    return tuple(str(RunKey("gateway", "", i, attempt, rerun_of)) for i in range(1, varied["count"] + 1))


def _gateway_variant_criterion(criterion: Criterion, runs: list[GatewayRun]) -> Criterion | None:
    return gateway_criterion(criterion, runs[0].plan)


def _gateway_run(ctx: Context, key: str) -> dict[str, Any]:
    run_key = RunKey.parse(key)
    plan = ctx.rubric.gateway
    if run_key.is_variant:
        assert ctx.variants is not None, f"{key}: a variant's run, in a grade without variants"
        plan = ctx.variants.gateway_plan(plan, run_key.variant, ctx.seed)
    rerun_of = run_key.criterion  # a rerun makes the cases of its one criterion again
    judged = [ctx.rubric.criterion(rerun_of)] if rerun_of else list(ctx.criteria)
    if run_key.is_variant:
        judged = [v for c in judged if (v := gateway_criterion(c, plan)) is not None]
    every = any(not c.cases for c in judged)  # a check over every case
    wanted = {name for c in judged for name in c.cases}
    cases = tuple(c for c in plan.cases if every or c.name in wanted or c.kind == "startup")
    limits = ctx.rubric.limits["gateway"]
    hang = HangBudget(limits["request_s"], limits["budget_s"], spent_s=ctx.hung_s)
    beside = ctx.open_box if ctx.spread > 1 else None  # a replay: the restarts in a sandbox of their own
    run = run_gateway(ctx.in_box(), ctx.submission, plan, seed=ctx.seed, hang=hang, cases=cases, beside=beside)
    ctx.hung_s = hang.spent_s
    return run.to_record()


def _gateway_facts(objects: list[GatewayRun], criterion: Criterion) -> GatewayRun | None:
    """The run, when it ran the criterion's cases (or the gateway never started: then it fails them all)."""
    run = objects[0]
    return run if not run.started or all(name in run.cases for name in criterion.cases) else None


def _gateway_cases_s(run: GatewayRun, criterion: Criterion) -> float:
    """How long the cases a gateway criterion reads took (every case, for a check of every case)."""
    names = criterion.cases or tuple(run.cases)
    timed = [float(run.cases[n].extra.get("case_s", 0.0)) for n in names if n in run.cases]
    return sum(timed) if any(timed) else run.wall_s


def _gateway_busy(runs: list[GatewayRun], criterion: Criterion, rubric: Rubric) -> str | None:
    run = runs[0]
    names = criterion.cases or tuple(run.cases)
    cases = [run.cases[n] for n in names if n in run.cases]
    return busy_from_ledgers([ledger for c in cases for ledger in (c.local, c.api)], limit_s=run.plan.busy_lag_s)


GATEWAY = Section(
    "gateway",
    "gateway",
    boxed=True,
    timed=True,
    keys=_gateway_keys,
    run=_gateway_run,
    load=GatewayRun.from_record,
    facts=_gateway_facts,
    busy=_gateway_busy,
    inherent=lambda run: run.inherent_s,
    variant_keys=_gateway_variant_keys,
    variant_criterion=_gateway_variant_criterion,
    own_s=lambda runs, criterion: _gateway_cases_s(runs[0], criterion),
)


# -- sizing: every input set, and the one-input-moved runs that diagnose a failing criterion ------


def _sizing_run(ctx: Context, key: str) -> dict[str, Any]:
    return run_sizing(ctx.in_box(), ctx.submission, limits=ctx.rubric.limits["sizing"], plan=ctx.sizing).to_record()


SIZING = Section(
    "sizing",
    "sizing",
    boxed=True,
    timed=False,
    keys=_once("sizing"),
    run=_sizing_run,
    load=SizingRuns.from_record,
    facts=_single,
    busy=_never_busy,
    inherent=lambda runs: runs.wall_s,
    own_s=lambda objects, criterion: objects[0].wall_s,
)


# -- manifests: the offline checker, no candidate code ------------------------------------------------

MANIFESTS = Section(
    "manifests",
    "manifests",
    boxed=False,
    timed=False,
    keys=_once("manifests"),
    run=lambda ctx, key: run_checker(ctx.submission).to_record(),
    load=ManifestsRun.from_record,
    facts=_single,
    busy=_never_busy,
    inherent=lambda run: 0.0,
)


# -- the memo: its text, the results file it names, and one sizing run on its own inputs -------------


def _memo_run(ctx: Context, key: str) -> dict[str, Any]:
    """The memo read, and the sizing command run once on its `sizing_inputs` when a figure cites it."""
    run = read_memo(ctx.submission)
    if run.sizing_flags is not None:
        run = with_sizing(run, *_memo_sizing(ctx, run.sizing_flags))
    return run.to_record()


def _memo_sizing(ctx: Context, flags: dict[str, Any]) -> tuple[dict[str, Any] | None, str, float]:
    """The sizing command's output on the memo's inputs (None and why when it has none), and its wall time."""
    if "sizing" not in ctx.submission.data:
        return None, "submission.yaml has no sizing command", 0.0
    assert ctx.open_box is not None
    with ctx.open_box() as box:
        run = run_set(box, ctx.submission, "memo", dict(flags), timeout_s=ctx.rubric.limits["sizing"]["set_s"])
    problem = f"the sizing command on sizing_inputs: {run.problem}" if run.problem else ""
    return (None if problem else run.output), problem, run.wall_s


MEMO = Section(
    "memo",
    "memo",
    boxed=False,
    timed=False,
    keys=_once("memo"),
    run=_memo_run,
    load=lambda record: facts_of(MemoRun.from_record(record)),
    facts=_single,
    busy=_never_busy,
    inherent=lambda facts: facts.sizing_wall_s,
    own_s=lambda objects, criterion: objects[0].sizing_wall_s,
)


SECTIONS: dict[str, Section] = {s.name: s for s in (LOADGEN, TESTS, GATEWAY, SIZING, MANIFESTS, MEMO)}
