"""Judging: a criterion's verdict from its run records, and the one rule for a borderline answer.

The same code judges during a grade and in `grader rejudge`: `judge` judges one attempt's public runs and
`with_variants` adds its unseen variants' verdict, judged apart; `needs_rerun` says whether that answer is borderline, and
`decide` turns attempt 1's verdict, and attempt 2's when there was one, into the decision; borderline
twice is `inconclusive`. Whoever holds the runs makes attempt 2 when `needs_rerun` says so (the
grade's runner runs it, a re-judge reads it back). A check is a pure function; so is everything here:
nothing in this module runs anything.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any, cast

from grader.criteria.catalog import registered
from grader.criteria.verdict import Verdict, is_borderline, lone_outlier, with_unseen
from grader.grading.sections import Section
from grader.outcome import CriterionResult, Evidence, Status, Unseen, Visibility
from grader.rubric import Criterion, Rubric

__all__ = ["Decision", "Variant", "decide", "judge", "needs_rerun", "result_of", "skipped", "unjudged", "with_variants"]

#: The unseen variants' runs at an attempt: the criterion as judged on them, and their objects.
Variant = tuple[Criterion, list[Any]]


@dataclass
class Decision:
    verdict: Verdict
    attempts: int
    inconclusive: bool
    why: str = ""  # why inconclusive, when it is not the machine or two borderline answers
    rerun: str = ""  # why attempt 2 was made: attempt 1's borderline margin, and its closest call


def judge(criterion: Criterion, section: Section, objects: list[Any], rubric: Rubric) -> Verdict | None:
    """The check's verdict on these objects (None when they do not cover the criterion), told whether the
    machine kept time."""
    facts = section.facts(objects, criterion)
    if facts is None:
        return None
    verdict = lone_outlier(registered()[criterion.id].judge(facts, criterion), rubric.judging.lone_outlier)
    verdict.busy = verdict.busy or section.busy(objects, criterion, rubric)
    return verdict


def with_variants(verdict: Verdict, section: Section, rubric: Rubric, variant: Variant | None) -> Verdict:
    """An attempt's verdict on its public runs with its unseen variants' judged apart and carried beside it
    (`variant`: the criterion as judged on them, and their objects; None: no variant covers it)."""
    unseen = judge(variant[0], section, variant[1], rubric) if variant is not None else None
    return verdict if unseen is None else with_unseen(verdict, unseen)


def needs_rerun(first: Verdict, rubric: Rubric) -> bool:
    """Whether attempt 1's answer is borderline, so its runs are made again (the caller makes them: judging runs
    nothing)."""
    return is_borderline(first, rubric.judging.borderline, rubric.judging.busy_borderline)


def decide(first: Verdict, second: Verdict | None, rubric: Rubric) -> Decision:
    """The decision from attempt 1's verdict and, when that was borderline, attempt 2's (None: no rerun was made or
    recorded). A second verdict is read only when the first needed it."""
    if not needs_rerun(first, rubric):
        return Decision(first, 1, False)
    if second is None:
        return Decision(first, 1, True, "borderline, and no rerun was recorded")
    # Two answers within the stated tolerance, each judged on a machine that kept time, meet the rule twice: a pass,
    # its closest call shown; so does a rerun within it after one request alone was read late (`outlier_alone`).
    # A person is asked when a near miss might be the machine's (an attempt that failed close to its limit), or when
    # a pass was judged where the machine could not tell right from wrong (`busy`: a probe starved, so the case's
    # premise never held).
    first_ok = first.passed or first.outlier_alone  # one request read late alone: the machine's, most likely
    clean_passes = first_ok and second.passed and not first.busy and not second.busy
    undecided = needs_rerun(second, rubric) and not clean_passes
    return Decision(second, 2, undecided, rerun=_why_rerun(first))


def _why_rerun(first: Verdict) -> str:
    """Attempt 1's borderline answer in one line: its margin (its worst error over the tolerance), its closest
    call, and the busy machine when that widened the band."""
    line = f"attempt 1 was borderline: margin {first.margin:.2f}" if first.margin is not None else "attempt 1"
    line += f" ({'passed' if first.passed else 'failed'})"
    if first.closest:
        line += f"; closest: {first.closest}"
    if first.busy:
        line += f"; the machine was busy: {first.busy}"
    return line


def result_of(criterion: Criterion, decision: Decision, *, duration_s: float) -> CriterionResult:
    verdict = decision.verdict
    status: Status = "inconclusive" if decision.inconclusive else ("passed" if verdict.passed else "failed")
    score = 0.0 if decision.inconclusive else round(criterion.weight * verdict.score_fraction, 6)
    output = verdict.output
    if decision.inconclusive:
        why = decision.why or (
            f"the machine was too busy both times: {verdict.busy}"
            if verdict.busy
            else f"borderline twice (within {criterion.tolerance_text} of the limit)"
        )
        output = f"INCONCLUSIVE: {why}; a person should look.\n{output}"
    return CriterionResult(
        id=criterion.id,
        title=criterion.text,
        deliverable=criterion.deliverable,
        weight=criterion.weight,
        visibility=_visibility(criterion),
        status=status,
        score=score,
        output=output,
        tolerance=criterion.tolerance_text,
        scenario=", ".join(criterion.runs_from),
        duration_s=round(duration_s, 3),
        attempts=decision.attempts,
        evidence=verdict.evidence,
        margin=None if verdict.margin is None else round(verdict.margin, 3),
        busy=verdict.busy,
        unseen=None
        if verdict.unseen is None
        else Unseen("passed" if verdict.unseen.passed else "failed", verdict.unseen.output, verdict.unseen.evidence),
        closest=verdict.closest,
        rerun=decision.rerun,
    )


def _visibility(criterion: Criterion) -> Visibility:
    return cast(Visibility, criterion.visibility)  # the rubric's schema allows only these two


def _unscored(criterion: Criterion, status: Status, output: str, evidence: Evidence | None = None) -> CriterionResult:
    """A criterion with no points and no verdict on the submission, named as the rubric names it."""
    return CriterionResult(
        id=criterion.id,
        title=criterion.text,
        deliverable=criterion.deliverable,
        weight=criterion.weight,
        visibility=_visibility(criterion),
        status=status,
        score=0.0,
        output=output,
        tolerance=criterion.tolerance_text,
        scenario=", ".join(criterion.runs_from),
        evidence=evidence or Evidence(),
    )


def skipped(criterion: Criterion, why: str) -> CriterionResult:
    return _unscored(criterion, "skipped", why)


#: How a report names a criterion the candidate's brief did not state (the start of its output).
NOT_IN_BRIEF = "not in this candidate's brief"


def not_in_brief(criterion: Criterion, contract: int) -> CriterionResult:
    """A criterion the brief of contract `contract` does not state: not judged, and out of the maximum (weight
    0), so work that met its own brief keeps every point of it."""
    result = _unscored(
        criterion,
        "skipped",
        f"{NOT_IN_BRIEF}: the submission follows contract {contract}, whose brief does not ask for this "
        "(CHANGELOG.md says which version added it)",
    )
    return replace(result, weight=0.0)


def unjudged(criterion: Criterion, why: str, *, logs: str = "") -> CriterionResult:
    """A criterion the grader could not judge (its own failure, not the submission's): no points,
    flagged for a person, never a guessed pass or fail."""
    return _unscored(criterion, "inconclusive", f"INCONCLUSIVE: {why}", Evidence(logs=logs))
