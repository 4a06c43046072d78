"""Live exercises started from the page: `grader live`'s own run, in a background thread, one at a time per
candidate, its progress lines kept for the page to poll.

Each run is `run_live` itself (grader/live/session.py) on the candidate's submission, into the report
folder's `live/`: `live/EXERCISE/run-N/` and `live/EXERCISE/live.json`, exactly as `grader live SUBMISSION
EXERCISE --out REPORT_DIR/live` records it, so `grader rejudge` judges a run again as it judges one made in a
terminal.

The candidate's submission is their folder: under `grader review --submissions DIR` (named as their report
folder, or an archive of that name), else where the grade read it (`runs/index.json`). An archive is
unpacked once, without trusting it (grader/grading/archive.py), into `ROUND_DIR/review/submissions/`.
"""

from __future__ import annotations

import json
import secrets
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

from grader.grading.archive import ArchiveError, unpack
from grader.grading.grade import RUNS
from grader.live.session import LiveError, pool, run_live
from grader.rubric import RubricError
from grader.rubric.live_pool import Exercise

__all__ = ["LIVE", "Busy", "LiveJob", "LiveJobs", "exercises", "recorded_runs", "submission_for"]

LIVE = "live"  # REPORT_DIR/live/EXERCISE/run-N, as `grader live --out REPORT_DIR/live` writes it
_ARCHIVES = (".zip", ".tar.gz", ".tgz", ".tar")
MAX_LINES = 5000  # a run prints a few dozen


class Busy(Exception):
    """An exercise is already running for this candidate."""


@dataclass
class LiveJob:
    id: str
    folder: Path  # the candidate's report folder
    exercise: str
    started: float = field(default_factory=time.time)
    lines: list[str] = field(default_factory=list)
    state: str = "running"  # running | passed | failed | error
    run: int | None = None
    score: float | None = None
    max_score: float | None = None
    statuses: dict[str, str] = field(default_factory=dict)
    message: str = ""

    def echo(self, line: str) -> None:
        if len(self.lines) < MAX_LINES:
            self.lines.append(str(line))


def exercises() -> tuple[list[Exercise], str | None]:
    """The pool's exercises (those `grader live --list` shows), or none and why (a kit without them)."""
    try:
        found = pool()
    except LiveError as exc:
        return [], str(exc)
    return list(found.exercises.values()), None


def submission_for(folder: Path, name: str, submissions: Path | None, unpack_to: Path) -> Path | None:
    """The candidate's own folder, to run an exercise on; None when it is not on this machine."""
    candidates: list[Path] = []
    if submissions is not None:
        candidates += [submissions / name, *(submissions / f"{name}{suffix}" for suffix in _ARCHIVES)]
    try:
        recorded = json.loads((folder / RUNS / "index.json").read_text(encoding="utf-8")).get("submission")
    except (OSError, ValueError, AttributeError):
        recorded = None
    if isinstance(recorded, str) and recorded:
        candidates.append(Path(recorded))
    for path in candidates:
        if path.is_dir() and (path / "submission.yaml").is_file():
            return path
        if path.is_file() and path.name.endswith(_ARCHIVES):
            target = unpack_to / name
            if target.is_dir():
                found = [p for p in (target, *target.iterdir()) if (p / "submission.yaml").is_file()]
                if found:
                    return found[0]
            try:
                return unpack(path, target)
            except (ArchiveError, OSError):
                continue
    return None


def recorded_runs(folder: Path) -> list[dict[str, object]]:
    """Every run recorded under the report folder's live/, from each exercise's live.json, oldest first."""
    runs: list[dict[str, object]] = []
    for log in sorted((folder / LIVE).glob("*/live.json")):
        try:
            data = json.loads(log.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            continue
        for run in data.get("runs", []) if isinstance(data, dict) else []:
            if isinstance(run, dict):
                runs.append({"exercise": log.parent.name, **run})
    return sorted(runs, key=lambda r: str(r.get("started", "")))


class LiveJobs:
    """The runs started from the page, by id; one running at a time per report folder."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._jobs: dict[str, LiveJob] = {}

    def running(self, folder: Path) -> LiveJob | None:
        with self._lock:
            return next((j for j in self._jobs.values() if j.folder == folder and j.state == "running"), None)

    def get(self, job_id: str) -> LiveJob | None:
        with self._lock:
            return self._jobs.get(job_id)

    def start(self, folder: Path, submission: Path, exercise: str) -> LiveJob:
        """Start `exercise` on `submission`, recorded under `folder/live/`; Busy when one runs for `folder`."""
        with self._lock:
            busy = next((j for j in self._jobs.values() if j.folder == folder and j.state == "running"), None)
            if busy is not None:
                raise Busy(f"{busy.exercise} is still running for this candidate; wait for its verdict")
            job = LiveJob(secrets.token_hex(8), folder, exercise)
            self._jobs[job.id] = job
        thread = threading.Thread(target=self._run, args=(job, submission), name=f"live-{exercise}", daemon=True)
        thread.start()
        return job

    @staticmethod
    def _run(job: LiveJob, submission: Path) -> None:
        try:
            outcome = run_live(submission, job.exercise, job.folder / LIVE, echo=job.echo)
        except (LiveError, RubricError) as exc:
            job.message, job.state = str(exc), "error"
            return
        except OSError as exc:
            job.message, job.state = f"{exc.filename or submission}: {exc.strerror}", "error"
            return
        except Exception as exc:  # noqa: BLE001 - the page must hear of any failure; the server goes on
            job.message, job.state = f"the run failed: {type(exc).__name__}: {exc}", "error"
            return
        grade = outcome.made.grade
        job.run, job.score, job.max_score = outcome.number, grade.score, grade.max_score
        job.statuses = {c.id: c.status for c in grade.criteria}
        job.state = "passed" if outcome.passed else "failed"
