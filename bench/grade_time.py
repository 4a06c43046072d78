"""How long `grader grade` takes on the reference submission, against the time no grader can save.

The inherent duration of a grade is the time the candidate's own commands run: each load-generator
scenario (its requests at the scenario's token rates, plus the candidate's interpreter start) and
each run of the candidate's tests. Everything else is the grader's overhead: starting the sandbox
and the fake servers, fetching ledgers, checking, writing reports. Run side by side in one
process: one grade section after the other (`--sandboxes 1`) and both sections at once (`--sandboxes 2`), each
with and without the unseen variants of the scenarios and gateway cases (rubric/variants.py).

    python -m bench.grade_time [--repeat 2]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import tempfile
from pathlib import Path

from bench import results_dir
from grader.grading.grade import GradeRequest, grade

ROOT = Path(__file__).resolve().parent.parent
REFERENCE = ROOT / "submissions" / "reference"
RESULTS = results_dir() / "grade_time.json"


def measure(jobs: int, variants: bool, only: tuple[str, ...] = ()) -> dict[str, float]:
    with tempfile.TemporaryDirectory() as out:
        result = grade(GradeRequest(REFERENCE, Path(out), only=only, sandboxes=jobs, echo=lambda _: None,
                                   with_variants=variants))
    return {"jobs": jobs, "variants": variants, "score": result.score, "max_score": result.max_score,
            "total_s": result.duration_s, "inherent_s": result.inherent_s,
            "total_over_inherent": round(result.duration_s / result.inherent_s, 3)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=2)
    parser.add_argument("--only", action="append", default=[], help="grade this part only (a quick try; repeatable)")
    args = parser.parse_args()
    only = tuple(args.only)
    rows = [measure(jobs, variants, only) for _ in range(args.repeat) for jobs in (1, 2) for variants in (False, True)]
    for row in rows:
        print(f"jobs {row['jobs']}, variants {'on' if row['variants'] else 'off'}: {row['score']:g}/{row['max_score']:g}, "
              f"total {row['total_s']:.1f} s, "
              f"candidate's own commands {row['inherent_s']:.1f} s, ratio {row['total_over_inherent']:.2f}")
    RESULTS.parent.mkdir(exist_ok=True)
    RESULTS.write_text(json.dumps({"command": f"python -m bench.grade_time --repeat {args.repeat}" + "".join(f" --only {o}" for o in only),
                                   "machine": f"{platform.machine()}, {platform.python_version()}",
                                   "load_average_at_end": os.getloadavg()[0],
                                   "runs": rows}, indent=1) + "\n")


if __name__ == "__main__":
    main()
