"""`grader live`: an exercise the grade never ran, put in front of the candidate's own code during the interview.

    grader live --list                                    # the pool: name, deliverable, time box, title
    grader live SUBMISSION brownout                       # tell the candidate what changed, run their command
    grader live SUBMISSION brownout --by-hand             # or wait while they run it themselves

Each call makes one run into `OUT/EXERCISE/run-N/` (a grade's folder: runs/ with the exercise's rubric,
report.json, junit.xml, report.html) and adds it to `OUT/EXERCISE/live.json`, so a candidate who changes
their code and runs again leaves every run recorded, each judged by the same pure criteria as the grade.
Before the run it prints what to tell the candidate (what changed, never the answer) and the command; after
it, the verdict, what made it fail beside the ledgers (grading/side_by_side.py) and how to reproduce it by
hand, as `grader replay` does, and how much of the time box is left.
"""

from __future__ import annotations

import datetime as dt
import json
import shlex
import shutil
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from grader.contract import Submission, check_submission
from grader.grading.by_hand import gateway_by_hand, loadgen_by_hand
from grader.grading.sections import SECTIONS
from grader.grading.side_by_side import side_by_side
from grader.live.exercise_run import LiveError, Made, make_run
from grader.rubric.live_pool import Exercise, LivePool, LivePoolError, kit_rubric_data, load_pool
from grader.running.loadgen import loadgen_argv

__all__ = ["LOG", "LiveError", "LiveOutcome", "listing", "pool", "run_live"]

LOG = "live.json"


@dataclass
class LiveOutcome:
    exercise: Exercise
    number: int
    folder: Path
    made: Made
    by_hand: bool
    lines: list[str] = field(default_factory=list)  # what was printed after the run

    @property
    def passed(self) -> bool:
        return all(c.status == "passed" for c in self.made.grade.criteria)


def pool() -> LivePool:
    """The kit's pool of live exercises; LiveError when this kit has none (a candidate's) or it is broken."""
    try:
        found = load_pool(kit_rubric_data())
    except LivePoolError as exc:
        raise LiveError(str(exc)) from None
    if found is None:
        raise LiveError("this kit has no live exercises (grader/unseen/live.yaml is the grader's, never a candidate's)")
    return found


def listing(found: LivePool) -> list[str]:
    """One line an exercise: its name, deliverable, time box and title."""
    width = max(len(n) for n in found.exercises)
    return [
        f"{e.name:<{width}}  {e.deliverable:<8} {e.time_box_min:>4g} min  {e.title}" for e in found.exercises.values()
    ]


def _log(folder: Path) -> dict[str, Any]:
    path = folder / LOG
    if not path.is_file():
        return {"runs": []}
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
        if not isinstance(data, dict) or not isinstance(data.get("runs"), list):
            raise TypeError("no list of runs")
    except (ValueError, TypeError) as exc:
        raise LiveError(f"{path}: not a live exercise's log ({exc}); move it away to start again") from None
    return data


def _submission(path: Path) -> Submission:
    if not path.is_dir():
        raise LiveError(f"{path}: a live exercise runs the candidate's folder (not an archive); unpack it first")
    check = check_submission(path)
    if check.submission is None:
        raise LiveError("; ".join(p.message for p in check.problems) or f"{path}: not a submission")
    return check.submission


def _command(sub: Submission, exercise: Exercise) -> str:
    """The candidate's own command as the run starts it (URLs and files are the run's)."""
    if exercise.deliverable == "loadgen":
        from grader.rubric import Scenario

        scenario = Scenario.from_dict({"name": exercise.name, **exercise.raw["scenario"]})
        return shlex.join(loadgen_argv(sub, scenario, "FAKE_SERVER_URL", "RESULTS_FILE"))
    return shlex.join(sub.command("gateway") + ["--config", "CONFIG_FILE", "--port", "PORT"])


def run_live(
    submission: Path,
    name: str,
    out: Path,
    *,
    seed: int = 0,
    by_hand: bool = False,
    echo: Callable[[str], None] = print,
    wait_s: float | None = None,
    now: Callable[[], dt.datetime] = lambda: dt.datetime.now(dt.UTC),
) -> LiveOutcome:
    """Make the next run of exercise `name` on `submission` into `out/name/run-N`, print it as the interviewer
    needs it, and add it to the exercise's log (`wait_s`: how long a run by hand waits for the candidate,
    default the time box). LiveError for a request that cannot be run (one line)."""
    found = pool()
    try:
        exercise = found.exercise(name)
    except LivePoolError as exc:
        raise LiveError(str(exc)) from None
    sub = _submission(submission)
    part = SECTIONS[exercise.deliverable].part
    if part not in sub.data:
        raise LiveError(f"{submission}: submission.yaml has no {part} part to run")
    home = out / exercise.name
    log = _log(home)
    number = len(log["runs"]) + 1
    folder = home / f"run-{number}"
    shutil.rmtree(folder, ignore_errors=True)
    started = now()
    first = dt.datetime.fromisoformat(log["runs"][0]["started"]) if log["runs"] else started
    echo(
        f"live exercise {exercise.name}: {exercise.title} ({exercise.deliverable}, time box {exercise.time_box_min:g} min)"
    )
    echo(f"run {number}" + (f", {_minutes((started - first).total_seconds())} into the time box" if number > 1 else ""))
    echo("tell the candidate:")
    echo("  " + exercise.tell)
    if not by_hand:
        echo(f"their command, run in the sandbox from their folder: {_command(sub, exercise)}")
    made = make_run(submission, found, exercise, folder, seed=seed, by_hand=by_hand, echo=echo, wait_s=wait_s)
    outcome = LiveOutcome(exercise, number, folder, made, by_hand)
    outcome.lines = _explain(outcome, submission)
    for line in outcome.lines:
        echo(line)
    used = (now() - first).total_seconds()
    left = exercise.time_box_min * 60 - used
    echo(
        f"time box: {_minutes(used)} of {exercise.time_box_min:g} min used"
        + ("" if left > 0 else " (over: the time box is spent)")
        + f"; run again after a change: grader live {shlex.quote(str(submission))} {exercise.name}"
        + (" --by-hand" if by_hand else "")
    )
    log.update(exercise=exercise.name, title=exercise.title, time_box_min=exercise.time_box_min)
    log.update(submission=str(submission))
    log["runs"].append(
        {
            "run": number,
            "folder": folder.name,
            "started": started.isoformat(),
            "by_hand": by_hand,
            "seed": seed,
            "seconds": round(made.seconds, 3),
            "score": made.grade.score,
            "max_score": made.grade.max_score,
            "statuses": {c.id: c.status for c in made.grade.criteria},
        }
    )
    home.mkdir(parents=True, exist_ok=True)
    (home / LOG).write_text(json.dumps(log, indent=1) + "\n", encoding="utf-8")
    return outcome


def _minutes(seconds: float) -> str:
    seconds = max(0, int(seconds))
    return f"{seconds // 60}:{seconds % 60:02d}"


def _explain(outcome: LiveOutcome, submission: Path) -> list[str]:
    """The verdict, what made each criterion fail beside the ledgers, and the commands that reproduce it."""
    made, exercise = outcome.made, outcome.exercise
    grade = made.grade
    word = "PASSED" if outcome.passed else "FAILED"
    lines = [
        "",
        (
            f"{word} {grade.score:g}/{grade.max_score:g}  {exercise.name}, run {outcome.number} "
            f"({'by hand' if outcome.by_hand else 'sandboxed'}, {made.seconds:.1f} s); "
            f"report: {outcome.folder / 'report.html'}"
        ),
    ]
    failing_first: list[str] = []
    for result in grade.criteria:
        lines.append(f"  {result.status.upper():<12} {result.score:g}/{result.weight:g}  {result.id}")
        if result.status == "passed":
            continue
        lines += [f"    {line}" for line in result.output.splitlines()[:8]]
        criterion = made.rubric.criterion(result.id)
        shown, failing = side_by_side(made.book, made.rubric, criterion, result)
        lines += [f"    {line}" for line in shown]
        failing_first = failing_first or failing
    if not outcome.passed and made.book.records:
        section = SECTIONS[exercise.deliverable]
        records = [r for k, r in sorted(made.book.records.items()) if r["section"] == exercise.deliverable]
        folder = outcome.folder / "by-hand"
        if exercise.deliverable == "loadgen":
            steps = loadgen_by_hand([section.load(r) for r in records[:1]], submission, folder)
        else:
            run = section.load(records[0])
            steps = gateway_by_hand(run, submission, folder, [n for n in failing_first if n in run.cases])
        lines += ["to reproduce by hand:", *[f"  {step}" for step in steps]]
    lines.append("for the interviewer: " + exercise.watch_for)
    return lines
