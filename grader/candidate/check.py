"""`grader check` and `grader memo`: the candidate's self-check, on their own laptop.

`grader check` grades what `grader grade` grades, limited to what a candidate may see: the contract,
every public criterion through the same engine on the public scenarios, cases and sizing input sets
(`GradeRequest(public_only=True)`), the manifest checklist and the memo's honesty rules. The reports
have the same format and say "public criteria only"; a hidden criterion is never selected, so it
is never named. The grade also runs what this does not, and the check says so: hidden criteria,
unseen variants of every scenario and case, unseen sizing input sets.

A busy machine costs a wait, never points: the check warns before it starts on a busy machine, and a
criterion it could not time (`inconclusive`) is judged again once the machine is quiet
(grader/candidate/machine.py). What is still undecided then is shown apart from the total, with why.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING

from grader.candidate.machine import load_now, wait_for_quiet
from grader.contract import ContractError, Submission, check_submission
from grader.criteria.memo_rules import BrokenRule, check_memo, errors
from grader.manifests import ManifestReport, check_manifests, to_text

if TYPE_CHECKING:
    from grader.grading.grade import GradeRequest
    from grader.outcome import Grade

__all__ = [
    "DEFAULT_OUT",
    "NOT_RUN",
    "QUIET_WAIT_S",
    "CheckOutcome",
    "memo_broken_rules",
    "memo_lines",
    "report_folder",
    "run_check",
]

#: Where a whole check writes its reports; a check of some parts writes beside it (report_folder).
DEFAULT_OUT = Path("check-report")

#: How long the check waits for a quiet machine before it judges an inconclusive criterion again anyway.
QUIET_WAIT_S = 120.0
#: Where the runs that judge those criteria again are kept, inside the check's report folder.
AGAIN = "judged-again"

#: What the self-check leaves to the grade, said before and after it runs.
NOT_RUN = (
    "The grade also runs what this check does not: hidden criteria, unseen variants of each scenario and "
    "gateway case (other settings within documented ranges: rates, slots, lengths, where faults fall, stall "
    "lengths, error codes, timeouts) and unseen sizing input sets. Follow the definitions, not the public "
    "scenarios' numbers."
)


def report_folder(out: Path | None, only: tuple[str, ...]) -> Path:
    """Where a check writes its reports: `out` when given; else check-report/, or, for a check of some parts
    only, check-report/only-PART[-PART]/, so that it never overwrites the last whole check's report."""
    if out is not None:
        return out
    return DEFAULT_OUT / ("only-" + "-".join(sorted(only))) if only else DEFAULT_OUT


@dataclass
class CheckOutcome:
    """What the self-check found, part by part; `passed` only when every part passed."""

    contract: list[str] = field(default_factory=list)  # problems; empty when the contract holds
    score: float = 0.0
    max_score: float = 0.0  # the criteria decided: an undecided one is left out of the total
    failed_criteria: list[str] = field(default_factory=list)
    undecided: dict[str, str] = field(default_factory=dict)  # still inconclusive once judged again: id -> why
    manifests: ManifestReport | None = None
    memo: list[BrokenRule] = field(default_factory=list)
    report: Path | None = None

    @property
    def passed(self) -> bool:
        return (
            not self.contract
            and not self.failed_criteria
            and not errors(self.memo)
            and (self.manifests is None or self.manifests.passed)
        )


def memo_broken_rules(path: Path) -> list[BrokenRule]:
    """The honesty findings of one memo file; an unreadable file is a ContractError naming it."""
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise ContractError(f"{path}: cannot read ({getattr(exc, 'strerror', None) or exc})") from None
    return check_memo(text)


def memo_lines(path: Path, findings: list[BrokenRule]) -> list[str]:
    """One line per finding, errors (scored) first, then advice (never scored); a finding on a line of the memo
    names it (`MEMO.md:12:`, as compilers do) and quotes it below."""
    ordered = sorted(findings, key=lambda f: f.severity != "error")
    lines = []
    for f in ordered:
        where = f"{path}:{f.line}" if f.line else f"{path}"
        lines.append(
            f"{where}: {f.severity.upper():6} {f.rule}" + (f" [{f.figure}]" if f.figure else "") + f": {f.message}"
        )
        if f.quote:
            lines.append(f"    > {f.quote[:200]}")
    scored = len(errors(findings))
    lines.append(
        f"{path}: {'every honesty rule holds' if not scored else f'{scored} honesty rule(s) broken'}"
        + (f"; {len(findings) - scored} piece(s) of advice" if len(findings) > scored else "")
    )
    return lines


def _again_when_quiet(result: Grade, run: GradeRequest, *, wait_s: float = QUIET_WAIT_S) -> Grade:
    """`result` with every inconclusive criterion judged again (its runs made again) once the machine is quiet,
    or after `wait_s` if it never is; the reports in `run.out` rewritten with the new verdicts. The new runs are
    kept in `run.out/judged-again/`."""
    from grader.grading.grade import grade
    from grader.reports import write_reports

    undecided = [c.id for c in result.criteria if c.status == "inconclusive"]
    if not undecided:
        return result
    run.echo(
        f"\n== {len(undecided)} criteria inconclusive ({', '.join(undecided)}): judged again once the machine is quiet"
    )
    quiet, load = wait_for_quiet(wait_s)
    run.echo("the machine is quiet now" if quiet else f"the machine is still busy after {wait_s:g} s ({load})")
    again = grade(replace(run, out=run.out / AGAIN, only=tuple(undecided)))
    judged = {c.id: c for c in again.criteria}
    merged = replace(result, criteria=[judged.get(c.id, c) if c.id in undecided else c for c in result.criteria])
    write_reports(merged, run.out)
    return merged


def _manifests(submission: Submission) -> ManifestReport:
    from grader.shared.kit_files import chart_dir

    mode, path = submission.manifests
    if mode == "values":
        return check_manifests([chart_dir()], values=path)
    return check_manifests([path])


def run_check(
    folder: Path,
    out: Path,
    *,
    only: tuple[str, ...] = (),
    seed: int = 0,
    sandboxes: int = 1,
    echo: Callable[[str], None] = print,
) -> CheckOutcome:
    """Check the submission in `folder` as the grader would, public criteria only; reports go to `out`."""
    from grader.grading.grade import GradeRequest, grade
    from grader.reports import score_table

    outcome = CheckOutcome()
    submission: Submission | None = None
    load = load_now()
    if load.busy:
        echo(
            f"WARNING: this machine is busy ({load}). A timing criterion it cannot time comes out inconclusive; "
            "the check judges those again once the machine is quiet, so closing other work makes it quicker."
        )
    echo("== contract")
    check = check_submission(folder)  # the grade below reads this same check, and skips what it says
    if check.problems:
        outcome.contract = check.report()
        for line in outcome.contract:
            echo(line)
    else:
        submission = check.loaded()
        echo(f"{folder / 'submission.yaml'}: {submission.follows()}")
    echo("\n== public criteria (the grader's engine on the public scenarios, cases and input sets)")
    echo(NOT_RUN)
    run = GradeRequest(folder, out, only=only, seed=seed, sandboxes=sandboxes, echo=echo, public_only=True)
    result = _again_when_quiet(grade(run), run)
    echo("\n" + score_table(result))
    decided = [c for c in result.criteria if c.status != "inconclusive"]
    outcome.score, outcome.max_score = sum(c.score for c in decided), sum(c.weight for c in decided)
    outcome.undecided = {c.id: c.output.splitlines()[0] for c in result.criteria if c.status == "inconclusive"}
    graded = {c.deliverable for c in result.criteria if c.status != "skipped"}
    outcome.failed_criteria = [
        c.id
        for c in result.criteria
        if c.status not in ("passed", "inconclusive")
        and not (c.status == "skipped" and c.deliverable in ("manifests", "sizing", "memo"))
    ]
    outcome.report = out / "report.html"
    if submission is not None and "manifests" not in graded and (not only or "manifests" in only):
        echo("== manifests (the checklist)")
        outcome.manifests = _manifests(submission)
        echo(to_text(outcome.manifests).rstrip())
    if submission is not None and "memo" not in graded and (not only or "memo" in only):
        echo("\n== memo (honesty rules)")
        memo = submission.path("memo")
        outcome.memo = memo_broken_rules(memo)
        for line in memo_lines(memo, outcome.memo):
            echo(line)
    echo(f"\npublic criteria only: {outcome.score:g}/{outcome.max_score:g}; report: {outcome.report.resolve()}")
    if outcome.undecided:
        weight = sum(c.weight for c in result.criteria if c.id in outcome.undecided)
        echo(
            f"Not in that total: {len(outcome.undecided)} criteria ({weight:g} points) still undecided, judged twice "
            "on a machine too busy to time them; run `grader check` again when it is quiet:"
        )
        for cid, why in outcome.undecided.items():
            echo(f"  {cid}: {why}")
    echo("Not run here: hidden criteria, unseen variants of the scenarios and cases, unseen sizing input sets.")
    return outcome
