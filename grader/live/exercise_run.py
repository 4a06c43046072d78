"""One run of a live exercise: made, recorded and judged by the grade's own engine, in the sandbox or by hand.

The exercise's rubric (the kit's, with the exercise's scenario or gateway cases and criteria in place of
the grade's; grader/rubric/live_pool.py) is written beside the run's records, as `runs/rubric.yaml`, so
`grader rejudge` judges the record again with it. In the sandbox the run is a grade with that rubric,
`grade()` itself; by hand it is the same sections, runs and judging (`LiveRuns`, `decide`) with a box on
this machine's loopback that waits for the candidate to start their command (hand_box.py). Either way the
folder holds what a grade's holds: runs/, report.json, junit.xml, report.html.
"""

from __future__ import annotations

import datetime as dt
import json
import socket
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from grader.contract import check_submission
from grader.criteria.catalog import registered
from grader.criteria.memo import HUMAN_CHECKLIST
from grader.grading.grade import RUNS, GradeRequest, grade
from grader.grading.judging import FactsAt, decide, result_of, unjudged
from grader.grading.live_runs import LiveRuns
from grader.grading.rejudge import KEPT_RUBRIC
from grader.grading.sections import NO_VARIANTS, SECTIONS, Context
from grader.live.hand_box import HandBox
from grader.outcome import CriterionResult, Grade
from grader.records.book import RecordBook
from grader.reports import write_reports
from grader.reports.text import progress
from grader.rubric import Rubric, load_rubric
from grader.rubric.live_pool import Exercise, LivePool, exercise_rubric, kit_rubric_data

__all__ = ["HAND_PORTS", "LiveError", "Made", "make_run", "write_rubric"]


class LiveError(ValueError):
    """A live run that cannot be made as asked (no pool, a broken submission.yaml); one line says why."""


@dataclass
class Made:
    grade: Grade
    rubric: Rubric
    book: RecordBook
    seconds: float


#: Ports a gateway run by hand may listen on: the grade's own first, all below the ephemeral range.
HAND_PORTS = range(18080, 18180)


def _free_port() -> int:
    """The first of HAND_PORTS nothing on this machine's loopback listens on."""
    for port in HAND_PORTS:
        with socket.socket() as sock:
            try:
                sock.bind(("127.0.0.1", port))
            except OSError:
                continue
            return port
    raise LiveError(f"no free port on 127.0.0.1 from {HAND_PORTS.start} to {HAND_PORTS.stop - 1} for the gateway")


def write_rubric(pool: LivePool, exercise: Exercise, folder: Path, *, by_hand: bool) -> Rubric:
    """Write the exercise's rubric into `folder/runs/` and load it, held to the criteria registry. By hand, the
    gateway listens on a free port of this machine's loopback rather than the sandbox's own."""
    data = exercise_rubric(pool, exercise.name, kit_rubric_data())
    if by_hand and exercise.deliverable == "gateway":
        data["gateway"]["port"] = _free_port()
    path = folder / RUNS / KEPT_RUBRIC
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data, indent=1) + "\n", encoding="utf-8")  # JSON is YAML
    return load_rubric(path, checks=registered())


def make_run(
    submission: Path,
    pool: LivePool,
    exercise: Exercise,
    folder: Path,
    *,
    seed: int,
    by_hand: bool,
    echo: Callable[[str], None],
    wait_s: float | None = None,
) -> Made:
    """Make, record and judge one run of `exercise` into `folder` (fresh), and write its reports. By hand, the
    candidate is waited for at most `wait_s` (default: the exercise's time box)."""
    started = time.perf_counter()
    rubric = write_rubric(pool, exercise, folder, by_hand=by_hand)
    if by_hand:
        wait = exercise.time_box_min * 60 if wait_s is None else wait_s
        result = _by_hand(submission, rubric, exercise, folder, seed=seed, echo=echo, wait_s=wait)
    else:
        request = GradeRequest(
            submission, folder, seed=seed, rubric=rubric.path, echo=echo, with_variants=False, sandboxes=1
        )
        result = grade(request)
    book = RecordBook.read(folder / RUNS) if (folder / RUNS / "index.json").is_file() else RecordBook(None)
    return Made(result, rubric, book, time.perf_counter() - started)


def _first_only(facts: FactsAt) -> FactsAt:
    """A run by hand is made once: no attempt 2, so a borderline answer is inconclusive (and says so)."""
    return lambda attempt: facts(attempt) if attempt == 1 else None


def _by_hand(
    submission: Path,
    rubric: Rubric,
    exercise: Exercise,
    folder: Path,
    *,
    seed: int,
    echo: Callable[[str], None],
    wait_s: float,
) -> Grade:
    """The grade's sections, runs and judging with a box whose commands the candidate starts (no reruns: a
    borderline answer is inconclusive, and says so)."""
    started_at = dt.datetime.now(dt.UTC).replace(microsecond=0)
    t0 = time.perf_counter()
    check = check_submission(submission)
    sub, problems = check.submission, check.by_part()
    section = SECTIONS[exercise.deliverable]
    broken = check.skipping(section.part)
    if sub is None or broken:
        raise LiveError(f"{submission}: " + "; ".join(broken or ["not a submission"]))
    book = RecordBook(folder / RUNS)
    report = progress(echo)
    results: list[CriterionResult] = []
    unjudged_ids: set[str] = set()
    with HandBox(sub.folder, folder, echo, wait_s=wait_s) as box:
        ctx = Context(sub, rubric, seed, rubric.criteria, sizing=rubric.sizing, box=box)
        live = LiveRuns(section, ctx, book, NO_VARIANTS)
        for criterion in rubric.criteria:
            begun = time.perf_counter()
            decision = decide(criterion, section, rubric, _first_only(live.facts_at(criterion)))
            took = time.perf_counter() - begun
            if decision is None:
                unjudged_ids.add(criterion.id)
                results.append(unjudged(criterion, f"the run made by hand does not cover {criterion.id}"))
            else:
                results.append(result_of(criterion, decision, duration_s=took))
            report(results[-1])
    result = Grade(
        submission=str(submission),
        candidate=sub.data.get("candidate"),
        seed=seed,
        started=started_at.isoformat(),
        duration_s=round(time.perf_counter() - t0, 3),
        sandboxed=False,
        sandbox_note=box.note,
        rubric=str(rubric.path),
        criteria=results,
        human_checklist=list(HUMAN_CHECKLIST) if any(c.deliverable == "memo" for c in results) else [],
        inherent_s=round(live.inherent, 3),
    )
    book.write_index(
        {
            "submission": result.submission,
            "candidate": result.candidate,
            "seed": seed,
            "started": result.started,
            "duration_s": result.duration_s,
            "sandboxed": False,
            "sandbox_note": result.sandbox_note,
            "rubric": result.rubric,
            "public_only": False,
            "contract_problems": problems,
            "criteria": [c.id for c in results],
            "durations": {c.id: c.duration_s for c in results},
            "not_judged": {  # kept as they were by a re-judge, as a grade's are
                c.id: {"status": c.status, "output": c.output, "logs": c.evidence.logs}
                for c in results
                if c.id in unjudged_ids
            },
            "inherent_s": result.inherent_s,
            "variants": NO_VARIANTS,
        }
    )
    write_reports(result, folder)
    return result
