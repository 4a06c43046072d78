"""How long `grader rejudge` takes a grade: stored run records judged again and the three reports written.

Two rounds of N stored grades, from the recorded runs in tests/fixtures/runs/: `full`, the
reference's whole grade (every criterion, every run) N times, the realistic round; and `mixed`, the
reference, every chaff and the independent submission in turn (most of them graded on a few
criteria). Each grade is copied into a report folder of its own, then every folder is re-judged
in one process: the records read and checked, every criterion judged with the kit's rubric,
report.json, junit.xml and report.html written. Nothing of a candidate's runs. Reported: the wall
time per grade (median, mean, max) and for the round, with the reading, judging and writing parts
apart. Then the full round once more through the command a hiring team runs,
`grader grade-many --rejudge ROUND --out OUT --jobs 2` (two processes), wall time over grades.

    python -m bench.rejudge [--grades 100]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import NotRequired, TypedDict

from bench import results_dir
from grader.grading.rejudge import grade_of
from grader.records.book import RecordBook
from grader.reports import write_reports
from grader.rubric import load_rubric

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = ROOT / "tests" / "fixtures" / "runs"
RESULTS = results_dir() / "rejudge.json"


class RejudgeRound(TypedDict):
    """One round's times, as rejudge.json's rounds hold them."""

    grades: int
    distinct_recordings: int
    round_s: float
    per_grade: dict[str, dict[str, float]]  # read, judge, write, total: median_s, mean_s, max_s
    grade_many_rejudge: NotRequired[dict[str, float]]  # jobs, round_s, per_grade_s


def measure(sources: list[Path], grades: int, *, command_jobs: int = 0) -> RejudgeRound:
    """Re-judge `grades` report folders made from `sources` in turn; the parts' times per grade (and, with
    `command_jobs`, the wall time per grade of `grader grade-many --rejudge --jobs N` on the same round)."""
    rubric = load_rubric()
    parts: dict[str, list[float]] = {"read": [], "judge": [], "write": [], "total": []}
    with tempfile.TemporaryDirectory(prefix="bench-rejudge-") as tmp:
        folders = []
        for i in range(grades):
            folder = Path(tmp) / f"grade-{i:03d}"
            shutil.copytree(sources[i % len(sources)], folder / "runs", ignore=shutil.ignore_patterns("source.txt"))
            folders.append(folder)
        round_started = time.perf_counter()
        for folder in folders:
            t0 = time.perf_counter()
            book = RecordBook.read(folder / "runs")
            t1 = time.perf_counter()
            grade = grade_of(book, rubric)
            t2 = time.perf_counter()
            write_reports(grade, folder)
            t3 = time.perf_counter()
            for name, value in (("read", t1 - t0), ("judge", t2 - t1), ("write", t3 - t2), ("total", t3 - t0)):
                parts[name].append(value)
        round_s = time.perf_counter() - round_started
        command: dict[str, float] = {}
        if command_jobs:
            started = time.perf_counter()
            subprocess.run(
                [
                    sys.executable,
                    "-m",
                    "grader.cli",
                    "grade-many",
                    "--rejudge",
                    tmp,
                    "--out",
                    str(Path(tmp) / "rejudged"),
                    "--jobs",
                    str(command_jobs),
                ],
                check=True,
                capture_output=True,
            )
            took = time.perf_counter() - started
            command = {"jobs": command_jobs, "round_s": round(took, 3), "per_grade_s": round(took / grades, 4)}
    per_grade = {
        name: {
            "median_s": round(statistics.median(v), 4),
            "mean_s": round(statistics.fmean(v), 4),
            "max_s": round(max(v), 4),
        }
        for name, v in parts.items()
    }
    result: RejudgeRound = {
        "grades": grades,
        "distinct_recordings": len(sources),
        "round_s": round(round_s, 3),
        "per_grade": per_grade,
    }
    if command:
        result["grade_many_rejudge"] = command
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--grades", type=int, default=100)
    args = parser.parse_args()
    mixed = sorted(p for p in FIXTURES.iterdir() if (p / "index.json").is_file()) if FIXTURES.is_dir() else []
    if not mixed:
        raise SystemExit(f"no recorded runs in {FIXTURES}: run `make fixtures` first")
    rounds = {
        "full": measure([FIXTURES / "reference"], args.grades, command_jobs=2),
        "mixed": measure(mixed, args.grades),
    }
    for label, result in rounds.items():
        print(
            f"{label}: {result['grades']} grades ({result['distinct_recordings']} distinct recordings) "
            f"re-judged in {result['round_s']:.2f} s"
        )
        for name, row in result["per_grade"].items():
            print(
                f"  {name:>5}: median {row['median_s'] * 1000:.1f} ms, mean {row['mean_s'] * 1000:.1f} ms, "
                f"max {row['max_s'] * 1000:.1f} ms a grade"
            )
        if "grade_many_rejudge" in result:
            cmd = result["grade_many_rejudge"]
            print(
                f"  grader grade-many --rejudge --jobs {cmd['jobs']}: {cmd['round_s']:.2f} s, "
                f"{cmd['per_grade_s'] * 1000:.1f} ms a grade"
            )
    RESULTS.parent.mkdir(exist_ok=True)
    RESULTS.write_text(
        json.dumps(
            {
                "command": f"python -m bench.rejudge --grades {args.grades}",
                "machine": f"{platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}",
                "rounds": rounds,
            },
            indent=1,
        )
        + "\n"
    )


if __name__ == "__main__":
    main()
