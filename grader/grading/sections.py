"""Sections of a grade: the criteria that share a sandbox and its runs, graded together.

A section runs what its criteria need once (a load-generator scenario feeds several criteria;
the test command runs once on the candidate's code and once per chaff variant), checks each
criterion, and reruns a scenario once when a timing check came out borderline. Each criterion's
result is handed to `report` as soon as it is known, so the terminal shows progress.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable
from typing import Any

from grader.contract import Submission
from grader.criteria import gateway, loadgen
from grader.criteria import manifests as manifest_criteria
from grader.criteria import memo as memo_criteria
from grader.criteria import sizing as sizing_criteria
from grader.criteria import tests as candidate_tests
from grader.criteria.busy import busy_from_ledgers
from grader.criteria.verdict import Verdict, is_borderline
from grader.grading.outcome import CriterionResult, Evidence
from grader.grading.rubric import Criterion, Rubric
from grader.runs.gateway import Box as GatewayBox
from grader.runs.gateway import GatewayRun, run_gateway
from grader.runs.gateway_cases import BUSY_LAG_S, CASES
from grader.runs.loadgen import Box, LoadgenRun, run_loadgen

__all__ = ["grade_gateway", "grade_loadgen", "grade_manifests", "grade_memo", "grade_sizing", "grade_tests", "result_of", "skipped", "unjudged"]

Report = Callable[[CriterionResult], None]


def result_of(criterion: Criterion, verdict: Verdict, *, duration_s: float, attempts: int = 1,
              inconclusive: bool = False) -> CriterionResult:
    status = "inconclusive" if inconclusive else ("passed" if verdict.passed else "failed")
    score = 0.0 if inconclusive else round(criterion.weight * verdict.score_fraction, 6)
    output = verdict.output
    if inconclusive:
        why = f"the machine was too busy both times: {verdict.busy}" if verdict.busy else \
            f"borderline twice (within {criterion.tolerance_text} of the limit)"
        output = f"INCONCLUSIVE: {why}; a person should look.\n{output}"
    return CriterionResult(
        id=criterion.id, title=criterion.text, deliverable=criterion.deliverable, weight=criterion.weight,
        visibility=criterion.visibility,  # type: ignore[arg-type]
        status=status, score=score, output=output, tolerance=criterion.tolerance_text,  # type: ignore[arg-type]
        scenario=", ".join(criterion.scenarios), duration_s=round(duration_s, 3), attempts=attempts,
        evidence=verdict.evidence, margin=None if verdict.margin is None else round(verdict.margin, 3),
        busy=verdict.busy,
    )


def skipped(criterion: Criterion, why: str) -> CriterionResult:
    return CriterionResult(
        id=criterion.id, title=criterion.text, deliverable=criterion.deliverable, weight=criterion.weight,
        visibility=criterion.visibility, status="skipped", score=0.0, output=why,  # type: ignore[arg-type]
        tolerance=criterion.tolerance_text, scenario=", ".join(criterion.scenarios),
    )


def unjudged(criterion: Criterion, why: str, *, logs: str = "") -> CriterionResult:
    """A criterion the grader could not judge (its own failure, not the submission's): no points,
    flagged for a person, never a guessed pass or fail."""
    return CriterionResult(
        id=criterion.id, title=criterion.text, deliverable=criterion.deliverable, weight=criterion.weight,
        visibility=criterion.visibility, status="inconclusive", score=0.0,  # type: ignore[arg-type]
        output=f"INCONCLUSIVE: {why}", tolerance=criterion.tolerance_text, scenario=", ".join(criterion.scenarios),
        evidence=Evidence(logs=logs),
    )


def grade_loadgen(box: Box, submission: Submission, rubric: Rubric, criteria: list[Criterion], *, seed: int,
                  report: Report) -> tuple[list[CriterionResult], float]:
    """Every load-generator criterion; returns the results and the candidate's own run time."""
    runs: dict[str, LoadgenRun] = {}
    inherent = 0.0

    def scenario_runs(criterion: Criterion, *, again: bool = False) -> list[LoadgenRun]:
        nonlocal inherent
        out = []
        for name in criterion.scenarios:
            key = f"{name}#2" if again else name
            if key not in runs:
                runs[key] = run_loadgen(box, submission, rubric.scenarios[name], seed=seed,
                                        label=f"{name}-rerun" if again else name)
                inherent += runs[key].wall_s
            out.append(runs[key])
        return out

    def judged(criterion: Criterion, *, again: bool = False) -> Verdict:
        used = scenario_runs(criterion, again=again)
        verdict = loadgen.CHECKS[criterion.id](used, criterion)
        verdict.busy = verdict.busy or busy_from_ledgers(run.ledger for run in used)
        return verdict

    results = []
    for criterion in criteria:
        started = time.perf_counter()
        verdict = judged(criterion)
        attempts, inconclusive = 1, False
        if is_borderline(verdict):
            attempts = 2
            verdict = judged(criterion, again=True)
            inconclusive = is_borderline(verdict)
        result = result_of(criterion, verdict, duration_s=time.perf_counter() - started, attempts=attempts,
                           inconclusive=inconclusive)
        report(result)
        results.append(result)
    return results, inherent


def grade_tests(box: Box, submission: Submission, criteria: list[Criterion], *,
                report: Report) -> tuple[list[CriterionResult], float]:
    """The candidate's tests: one own-code run, then the chaff variants the criteria need."""
    started = time.perf_counter()
    variants: tuple[Any, ...] = tuple(v for c in criteria for v in candidate_tests.CHECKS[c.id][1])
    runs = candidate_tests.run_tests(box, submission, variants=variants)
    inherent = runs.own.wall_s + sum(r.wall_s for r in runs.variants.values())
    per_criterion = (time.perf_counter() - started) / max(len(criteria), 1)
    results = []
    for criterion in criteria:
        check, _ = candidate_tests.CHECKS[criterion.id]
        result = result_of(criterion, check(runs, criterion), duration_s=per_criterion)
        report(result)
        results.append(result)
    return results, inherent


def grade_gateway(box: GatewayBox, submission: Submission, rubric: Rubric, criteria: list[Criterion], *, seed: int,
                  report: Report) -> tuple[list[CriterionResult], float]:
    """Every gateway criterion from one gateway run through the cases they need (in the fixed order).

    A borderline timing check reruns, once, the gateway on the cases of that criterion only.
    """
    wanted = {name for c in criteria for name in gateway.CASES_OF.get(c.id, ())}
    everything = any(c.id not in gateway.CASES_OF for c in criteria)  # the checks over all cases
    cases = tuple(case for case in CASES if everything or case.name in wanted or case.kind == "startup")
    started = time.perf_counter()
    run = run_gateway(box, submission, seed=seed, cases=cases)
    inherent = run.inherent_s
    per_criterion = (time.perf_counter() - started) / max(len(criteria), 1)
    results = []
    for criterion in criteria:
        named = dataclasses.replace(criterion, scenarios=gateway.CASES_OF.get(criterion.id, ("every case",)))
        verdict = _gateway_verdict(run, criterion)
        attempts, inconclusive, took = 1, False, per_criterion
        if is_borderline(verdict):
            attempts = 2
            again_started = time.perf_counter()
            names = set(gateway.CASES_OF.get(criterion.id, ()))  # none named: a check over every case
            again = run_gateway(box, submission, seed=seed,
                                cases=tuple(c for c in CASES if not names or c.name in names or c.kind == "startup"))
            inherent += again.inherent_s
            verdict = _gateway_verdict(again, criterion)
            inconclusive = is_borderline(verdict)
            took += time.perf_counter() - again_started
        result = result_of(named, verdict, duration_s=took, attempts=attempts, inconclusive=inconclusive)
        report(result)
        results.append(result)
    return results, inherent


def _gateway_verdict(run: GatewayRun, criterion: Criterion) -> Verdict:
    """A gateway check's verdict, told whether its cases' servers kept time (for checks with a margin)."""
    verdict = gateway.CHECKS[criterion.id](run, criterion)
    names = gateway.CASES_OF.get(criterion.id) or tuple(run.cases)
    cases = [run.cases[n] for n in names if n in run.cases]
    verdict.busy = verdict.busy or busy_from_ledgers((ledger for c in cases for ledger in (c.local, c.api)),
                                                     limit_s=BUSY_LAG_S)
    return verdict


def _plain(criteria: list[Criterion], facts: Any, checks: dict[str, Any], started: float,
           report: Report) -> list[CriterionResult]:
    """Criteria judged from one set of facts, each reported as soon as it is judged."""
    per_criterion = (time.perf_counter() - started) / max(len(criteria), 1)
    results = []
    for criterion in criteria:
        result = result_of(criterion, checks[criterion.id](facts, criterion), duration_s=per_criterion)
        report(result)
        results.append(result)
    return results


def grade_manifests(submission: Submission, criteria: list[Criterion], *,
                    report: Report) -> tuple[list[CriterionResult], float]:
    """Every manifests criterion from one run of the offline checker (no candidate code runs)."""
    started = time.perf_counter()
    checked = manifest_criteria.run_checker(submission)
    return _plain(criteria, checked, {c.id: manifest_criteria.check for c in criteria}, started, report), 0.0


def grade_sizing(box: Box, submission: Submission, criteria: list[Criterion], *,
                 report: Report) -> tuple[list[CriterionResult], float]:
    """Every sizing criterion from one run per input set (and, for a failure, runs that name the ignored input)."""
    started = time.perf_counter()
    runs = sizing_criteria.run_sizing(box, submission)
    results = _plain(criteria, runs, sizing_criteria.CHECKS, started, report)
    return results, runs.wall_s


def grade_memo(submission: Submission, criteria: list[Criterion], *,
               report: Report) -> tuple[list[CriterionResult], float]:
    """Every memo criterion from one read of the memo; the sizing command runs once, in a sandbox, on the
    memo's own inputs when a figure cites its output."""
    from grader.sandbox import Sandbox

    started = time.perf_counter()
    inherent = 0.0

    def run_sizing(flags: dict[str, Any]) -> tuple[dict[str, Any] | None, str]:
        nonlocal inherent
        if "sizing" not in submission.data:
            return None, "submission.yaml has no sizing command"
        with Sandbox(submission.folder) as box:
            run = sizing_criteria.run_set(box, submission, "memo", dict(flags))
        inherent += run.wall_s
        return (run.output, "") if not run.problem else (None, f"the sizing command on sizing_inputs: {run.problem}")

    facts = memo_criteria.read_memo(submission, run_sizing)
    return _plain(criteria, facts, memo_criteria.CHECKS, started, report), inherent
