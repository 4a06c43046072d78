"""Run the candidate's `sizing.command` on every input set, and on one input moved at a time.

Each set is sent as flags: the public ones of the rubric (`sizing.sets`) and, in a grade, the hidden
ones (grader/unseen/sizing_sets.yaml, never in a candidate's kit). The command must print one JSON
object. Then the base set runs once more per input, that input moved (the rubric's `sizing.perturb`,
public values), so a criterion can name an input the command ignores, in `grader check` as in the
grade; and once per input it must refuse (a flag left out or out of its range: `sizing.refuse`).
A `SizingRuns` is the run record; criteria/sizing.py judges it.
"""

from __future__ import annotations

import json
from typing import Any

from grader.contract import Submission, schema_errors
from grader.records.sizing import SizingRun, SizingRuns
from grader.rubric.sizing_plan import SizingPlan, argv
from grader.sandbox.box_api import Box

__all__ = ["run_set", "run_sizing"]


def run_set(
    box: Box, submission: Submission, name: str, flags: dict[str, Any], *, timeout_s: float, tail_chars: int = 1500
) -> SizingRun:
    """Run the command once; a crash, a hang or output that is not the contract's object is a problem."""
    done = box.run(submission.command("sizing") + argv(flags), timeout_s=timeout_s, files_back=[])
    tail = done.stderr_tail[-tail_chars:].strip()
    if done.timed_out:
        return SizingRun(
            name, flags, None, f"hung: stopped after {timeout_s:g} s (the limit for one input set)", tail, done.wall_s
        )
    if done.killed:
        return SizingRun(name, flags, None, f"killed ({done.killed})", tail, done.wall_s)
    if done.exit_code != 0:
        return SizingRun(name, flags, None, f"exited {done.exit_code}", tail, done.wall_s, done.exit_code)
    try:
        data = json.loads(done.stdout_tail)
    except ValueError as exc:
        first = done.stdout_tail.strip().splitlines()[:1]
        return SizingRun(
            name,
            flags,
            None,
            f"stdout is not one JSON object ({exc}); it begins {first[0][:80]!r}" if first else "stdout is empty",
            tail,
            done.wall_s,
            done.exit_code,
        )
    problems = schema_errors("sizing-output", data)
    if problems:
        return SizingRun(
            name,
            flags,
            data if isinstance(data, dict) else None,
            "does not follow sizing-output.schema.json: " + "; ".join(problems[:3]),
            tail,
            done.wall_s,
            done.exit_code,
        )
    return SizingRun(name, flags, data, "", tail, done.wall_s, done.exit_code)


def run_sizing(box: Box, submission: Submission, *, limits: dict[str, float], plan: SizingPlan) -> SizingRuns:
    """Every set's run (each stopped at the rubric's set_s; once hung runs have used budget_s, the rest are
    not run); then, when the base set gave an output, the base set once per input, that input moved to its
    `perturb` value, so a command that ignores a flag shows it in every check, not only after a failure."""
    hung = 0.0

    def one(name: str, flags: dict[str, Any], tail_chars: int = 1500) -> SizingRun:
        nonlocal hung
        if hung >= limits["budget_s"]:
            return SizingRun(name, flags, None, f"not run: the sizing command hung for {hung:.0f} s on earlier sets")
        run = run_set(box, submission, name, flags, timeout_s=limits["set_s"], tail_chars=tail_chars)
        hung += run.wall_s if run.problem.startswith("hung") else 0.0
        return run

    base, perturb = plan.perturb_base, plan.perturb
    runs = SizingRuns([one(name, flags) for name, flags in plan.sets.items()], base, perturb)
    # a traceback's first line may be thousands of characters up: a refusal's stderr is kept longer
    runs.refusals = [one(r.name, r.flags(plan.sets[base]), tail_chars=8000) for r in plan.refuse]
    if runs.base.output is None:
        return runs
    for flag, value in perturb.items():
        runs.extra[flag] = one(f"{base}+{flag}", {**runs.base.flags, flag: value})
    return runs
