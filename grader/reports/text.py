"""What every report format says the same way: clean text, number formats, the summary, the table.

Candidate-provided strings (outputs, logs, reported figures) can hold anything a process prints:
ANSI colour codes, NUL bytes, undecodable bytes kept as lone surrogates. XML 1.0 cannot carry most
control characters at all, and a UTF-8 file cannot carry a lone surrogate, so each format runs
text through `clean` first. Visible escapes (`\\x1b`) keep the evidence legible instead of
dropping it.
"""

from __future__ import annotations

import re
import shlex
import threading
from collections import defaultdict
from collections.abc import Callable

from grader.outcome import NEAR_MISS, STATUSES, CriterionResult, Grade

__all__ = [
    "awarded",
    "by_deliverable",
    "clean",
    "fmt_points",
    "fmt_seconds",
    "progress",
    "replay_command",
    "sandbox_warning",
    "score_table",
    "status_counts",
    "summary_lines",
    "totals",
]

# Tab, LF and CR stay; every other C0 control, DEL, the C1 controls, lone surrogates and the two
# XML non-characters become a visible escape.
_UNSAFE = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f\ud800-\udfff\ufffe\uffff]")


def clean(text: object) -> str:
    """`text` as a string that every format can carry byte for byte: unsafe characters escaped."""
    plain = str(text)
    if plain.isascii() and plain.isprintable():  # most cells of a report: nothing to escape, no pattern to run
        return plain
    return _UNSAFE.sub(
        lambda m: f"\\x{ord(m.group()):02x}" if ord(m.group()) < 0x100 else f"\\u{ord(m.group()):04x}", plain
    )


def awarded(c: CriterionResult) -> float:
    """The points a criterion gives: inconclusive and skipped give none, whatever the result says."""
    return c.score if c.status in ("passed", "failed") else 0.0


def totals(grade: Grade) -> tuple[float, float]:
    """(score, max_score) as every report states them."""
    return (round(sum(awarded(c) for c in grade.criteria), 6), round(sum(c.weight for c in grade.criteria), 6))


def fmt_points(value: float) -> str:
    """Points without noise: 3, 2.5, 0.333333 (never 3.0000000004)."""
    return f"{round(value, 6):g}" if abs(value) < 1e6 else f"{value:.6g}"


def fmt_seconds(value: float) -> str:
    return f"{value:.3f}"


def by_deliverable(grade: Grade) -> dict[str, list[CriterionResult]]:
    """Criteria grouped by deliverable, in the order the rubric first names each deliverable."""
    groups: dict[str, list[CriterionResult]] = defaultdict(list)
    for c in grade.criteria:
        groups[c.deliverable].append(c)
    return dict(groups)


def status_counts(criteria: list[CriterionResult]) -> dict[str, int]:
    counts: dict[str, int] = {s: 0 for s in STATUSES}
    for c in criteria:
        counts[c.status] += 1
    return counts


# How a sandbox note opens when the candidate's code was not confined as it should be: no namespace
# at all, or a limit nothing held (grader.sandbox.enforcement), or no candidate code run.
_WARNINGS = ("UNSANDBOXED", "NOT ENFORCED", "NOT GRADED")


def sandbox_warning(grade: Grade) -> str:
    """The line that opens every report when the candidate's code was not fully confined
    (UNSANDBOXED, or NOT ENFORCED: a limit nothing held); empty when it was."""
    note = clean(grade.sandbox_note).strip()
    if not grade.sandboxed:
        return note if note.upper().startswith(_WARNINGS) else f"UNSANDBOXED: {note}".rstrip(": ")
    return note if note.startswith(_WARNINGS) else ""


def summary_lines(grade: Grade) -> list[str]:
    """The few lines that open every report; the first is the sandbox's warning when there is one."""
    lines = []
    warning = sandbox_warning(grade)
    if warning:
        lines.append(warning)
    counts = status_counts(grade.criteria)
    score, max_score = totals(grade)
    lines.append(
        f"Score {fmt_points(score)} / {fmt_points(max_score)}: " + ", ".join(f"{n} {s}" for s, n in counts.items())
    )
    if counts["inconclusive"]:
        lines.append(f"{counts['inconclusive']} inconclusive criteria scored 0 and need a person's judgement.")
    lines.append(
        f"Submission {clean(grade.submission)}"
        + (f" by {clean(grade.candidate)}" if grade.candidate else "")
        + f", seed {grade.seed}, started {clean(grade.started)}, {fmt_seconds(grade.duration_s)} s."
    )
    if grade.edition:
        lines.append(
            f"Graded against contract {grade.edition.get('contract')}, edition {clean(str(grade.edition.get('name')))}"
            f", by kit {clean(str(grade.edition.get('kit')))}."
        )
    if grade.edition_fit:
        lines.append(f"Edition: {clean(grade.edition_fit)}: a solution from another cohort? A person should look.")
    if not warning:
        lines.append(f"Sandbox: {clean(grade.sandbox_note)}")
    for problem in grade.contract_problems:
        lines.append(f"Contract: {clean(problem)}")
    return lines


REPLAYS_LISTED = 8  # replay commands listed under the terminal table; the reports list every one


def replay_command(grade: Grade, c: CriterionResult, *, candidate: bool = False) -> str | None:
    """The command that replays a failed or undecided criterion, or a pass that came close to a limit (None when
    it passed clear of it or was not run). A report the candidate may see gets none for a hidden criterion, so
    nothing there names its scenario."""
    if not (c.status in ("failed", "inconclusive") or c.near_miss) or (candidate and c.visibility == "hidden"):
        return None
    if c.deliverable not in ("loadgen", "gateway", "sizing", "tests", "memo", "manifests"):
        return None
    return f"grader replay {shlex.quote(clean(grade.submission))} {c.id} --seed {grade.seed}"


def score_table(grade: Grade) -> str:
    """A plain-text table for the terminal: one line per criterion, then the total."""
    rows = [
        (
            c.status.upper(),
            f"{fmt_points(awarded(c))}/{fmt_points(c.weight)}",
            clean(c.id),
            clean(c.title) + (" [hidden]" if c.visibility == "hidden" else ""),
        )
        for c in grade.criteria
    ]
    widths = [max([len(h)] + [len(r[i]) for r in rows]) for i, h in enumerate(("STATUS", "SCORE", "ID"))]
    lines = []
    warning = sandbox_warning(grade)
    if warning:
        lines.append(warning)
    header = ("STATUS", "SCORE", "ID", "TITLE")
    for row in [header, *rows]:
        lines.append("  ".join(cell.ljust(widths[i]) for i, cell in enumerate(row[:3])) + "  " + row[3])
    score, max_score = totals(grade)
    total = f"{fmt_points(score)}/{fmt_points(max_score)}"
    lines.append(f"{'TOTAL'.ljust(widths[0])}  {total}")
    replays = [
        command for c in grade.criteria if not c.near_miss and (command := replay_command(grade, c, candidate=True))
    ]
    if replays:
        lines.append("\nReplay a failed criterion (its runs again, what made it fail, how to reproduce it by hand):")
        lines += [f"  {command}" for command in replays[:REPLAYS_LISTED]]
        if len(replays) > REPLAYS_LISTED:  # a first check of the skeleton fails nearly everything
            example = f"grader replay {shlex.quote(clean(grade.submission))} ID --seed {grade.seed}"
            lines.append(f"  ... and {len(replays) - REPLAYS_LISTED} more: {example}, with a failed ID above")
    near = [c for c in grade.criteria if c.near_miss and c.visibility == "public"]
    if near:
        lines.append("\nNear misses (passed, but close to a limit; replay one to see how close):")
        for c in near:
            why = c.closest or c.rerun or f"margin {c.margin}"
            lines.append(
                f"  {clean(c.id)}: {clean(why)}" + (f" (margin {c.margin:.2f})" if c.margin is not None else "")
            )
            lines.append(f"    {replay_command(grade, c, candidate=True)}")
    return "\n".join(lines) + "\n"


def progress(echo: Callable[[str], None]) -> Callable[[CriterionResult], None]:
    """One line per criterion as soon as it is judged; under it, why it was judged twice and how close a timing
    check came (its closest call, with the limit), for a near miss that passed too: a candidate should see it."""
    lock = threading.Lock()
    marks = {"passed": "PASS", "failed": "FAIL", "inconclusive": "INCONCLUSIVE", "skipped": "SKIP"}

    def report(result: CriterionResult) -> None:
        rerun = ", rerun" if result.attempts > 1 else ""
        head = f"{marks[result.status]:<12} {result.score:g}/{result.weight:g}  {result.id:<26} "
        lines = [f"{head}({result.duration_s:.1f} s{rerun})"]
        if result.rerun:
            lines.append(f"{'':<12} rerun: {result.rerun}")
        if result.closest and result.margin is not None and result.margin >= NEAR_MISS:  # passed or not
            lines.append(f"{'':<12} closest call (margin {result.margin:.2f}): {result.closest}")
        with lock:
            for line in lines:
                echo(line)

    return report
