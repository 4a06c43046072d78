"""One run of a live exercise: made, recorded and judged by the grade's own engine, in the sandbox or by hand.

The exercise's rubric (the kit's, with the exercise's scenario or gateway cases and criteria in place of
the grade's; grader/rubric/live_pool.py) is written beside the run's records, as `runs/rubric.yaml`, so
`grader rejudge` judges the record again with it. The run is a grade with that rubric, `grade()` itself: in
the sandbox as any grade, or by hand with a box on this machine's loopback that waits for the candidate to
start their command (hand_box.py) and no reruns. Either way the folder holds what a grade's holds: runs/,
report.json, junit.xml, report.html.
"""

from __future__ import annotations

import json
import socket
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from grader.contract import check_submission
from grader.criteria.catalog import registered
from grader.grading.grade import RUNS, GradeRequest, grade
from grader.grading.rejudge import KEPT_RUBRIC
from grader.grading.sections import SECTIONS
from grader.live.hand_box import HandBox
from grader.outcome import Grade
from grader.records.book import RecordBook
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
    """A grade of the exercise with a box whose commands the candidate starts (hand_box.py), and no reruns: a run
    by hand is made once, so a borderline answer is inconclusive, and says so."""
    check = check_submission(submission)
    broken = check.skipping(SECTIONS[exercise.deliverable].part)
    if check.submission is None or broken:
        raise LiveError(f"{submission}: " + "; ".join(broken or ["not a submission"]))
    request = GradeRequest(
        submission,
        folder,
        seed=seed,
        rubric=rubric.path,
        echo=echo,
        with_variants=False,
        open_box=lambda candidate: HandBox(candidate, folder, echo, wait_s=wait_s),
        by_hand=True,
    )
    return grade(request)
