"""How long `grader grade` takes on the reference submission, against the time no grader can save.

The inherent duration of a grade is the time the candidate's own commands run: each load-generator
scenario (its requests at the scenario's token rates, plus the candidate's interpreter start) and
each run of the candidate's tests. Everything else is the grader's overhead: starting the sandbox
and the fake servers, fetching ledgers, checking, writing reports. Run side by side in one
process: one grade section after the other (`--sandboxes 1`) and both sections at once (`--sandboxes 2`), each
with and without the unseen variants of the scenarios and gateway cases (rubric/variants.py).

`--against CHECKOUT` instead grades the reference as a hiring team does (`grader grade --seed 0`, two
sections at once, the unseen variants included) with this checkout and with another one (a git worktree
of an earlier commit, with its own `.venv`, which any make target there builds), alternately, and
reports this one's wall time over the other's: how much a change made the grade slower, measured side
by side on the same machine in the same minutes.

    python -m bench.grade_time [--repeat 2] [--only PART]
    python -m bench.grade_time --against ../before [--repeat 2]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import TypedDict

from bench import results_dir
from grader.grading.grade import GradeRequest, grade

ROOT = Path(__file__).resolve().parent.parent
REFERENCE = ROOT / "submissions" / "reference"
RESULTS = results_dir() / "grade_time.json"


class GradeTime(TypedDict):
    """One grade of the reference, as grade_time.json's runs hold it."""

    jobs: int
    variants: bool
    score: float
    max_score: float
    total_s: float
    inherent_s: float
    total_over_inherent: float | None  # None when none of the candidate's own commands ran


def measure(jobs: int, variants: bool, only: tuple[str, ...] = ()) -> GradeTime:
    with tempfile.TemporaryDirectory() as out:
        result = grade(
            GradeRequest(REFERENCE, Path(out), only=only, sandboxes=jobs, echo=lambda _: None, with_variants=variants)
        )
    return {
        "jobs": jobs,
        "variants": variants,
        "score": result.score,
        "max_score": result.max_score,
        "total_s": result.duration_s,
        "inherent_s": result.inherent_s,
        "total_over_inherent": round(result.duration_s / result.inherent_s, 3) if result.inherent_s else None,
    }


def measure_cli(checkout: Path, label: str) -> dict[str, float | str]:
    """One whole grade of the reference by `checkout`'s own `grader grade`, as a subprocess run from it.

    Its command line is the one a hiring team types; the flag for two sections at once is `--sandboxes` now
    and was `--jobs` before, so the checkout's own help says which it takes."""
    own = checkout / ".venv" / "bin" / "python"  # its own install: the sandbox imports the kit as installed
    cli = [str(own) if own.is_file() else sys.executable, "-m", "grader.cli", "grade"]
    helped = subprocess.run([*cli, "--help"], cwd=checkout, capture_output=True, text=True, check=True)
    at_once = "--sandboxes" if "--sandboxes" in helped.stdout else "--jobs"
    with tempfile.TemporaryDirectory() as out:
        subprocess.run(
            [*cli, str(checkout / "submissions" / "reference"), "--out", out, "--seed", "0", at_once, "2"],
            cwd=checkout,
            capture_output=True,
            text=True,
            check=True,
        )
        report = json.loads((Path(out) / "report.json").read_text())
    return {
        "checkout": label,
        "score": report["score"],
        "max_score": report["max_score"],
        "total_s": report["execution_time"],
    }


def against(other: Path, repeat: int) -> None:
    """This checkout's grade time over `other`'s, the two grading alternately."""
    # Rows say "this" or "other", never a path: a result file names nothing outside the repository.
    rows = [measure_cli(tree, label) for _ in range(repeat) for tree, label in ((other, "other"), (ROOT, "this"))]
    mine = [float(r["total_s"]) for r in rows if r["checkout"] == "this"]
    theirs = [float(r["total_s"]) for r in rows if r["checkout"] == "other"]
    for row in rows:
        print(f"{row['checkout']}: {row['score']:g}/{row['max_score']:g}, total {float(row['total_s']):.1f} s")
    ratio = statistics.mean(mine) / statistics.mean(theirs)
    print(f"this checkout's grade over the other's: {ratio:.2f}")
    revision = subprocess.run(
        ["git", "rev-parse", "--short", "HEAD"], cwd=other, capture_output=True, text=True, check=False
    )
    (results_dir() / "grade_time_against.json").write_text(
        json.dumps(
            {
                "command": f"python -m bench.grade_time --against CHECKOUT --repeat {repeat}",
                "other": revision.stdout.strip() or other.name,
                "machine": f"{platform.machine()}, {platform.python_version()}",
                "load_average_at_end": os.getloadavg()[0],
                "this_over_other": round(ratio, 3),
                "runs": rows,
            },
            indent=1,
        )
        + "\n"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=2)
    parser.add_argument("--only", action="append", default=[], help="grade this part only (a quick try; repeatable)")
    parser.add_argument("--against", type=Path, metavar="CHECKOUT", help="another checkout to time side by side")
    args = parser.parse_args()
    if args.against is not None:
        if not (args.against / "grader").is_dir():
            parser.error(f"--against {args.against}: not a checkout of the kit (no grader/ in it)")
        against(args.against.resolve(), args.repeat)
        return
    only = tuple(args.only)
    rows = [measure(jobs, variants, only) for _ in range(args.repeat) for jobs in (1, 2) for variants in (False, True)]
    for row in rows:
        print(
            f"jobs {row['jobs']}, variants {'on' if row['variants'] else 'off'}: {row['score']:g}/{row['max_score']:g}, "
            f"total {row['total_s']:.1f} s, "
            f"candidate's own commands {row['inherent_s']:.1f} s, ratio "
            + (f"{row['total_over_inherent']:.2f}" if row["total_over_inherent"] is not None else "n/a (none ran)")
        )
    RESULTS.parent.mkdir(exist_ok=True)
    RESULTS.write_text(
        json.dumps(
            {
                "command": f"python -m bench.grade_time --repeat {args.repeat}" + "".join(f" --only {o}" for o in only),
                "machine": f"{platform.machine()}, {platform.python_version()}",
                "load_average_at_end": os.getloadavg()[0],
                "runs": rows,
            },
            indent=1,
        )
        + "\n"
    )


if __name__ == "__main__":
    main()
