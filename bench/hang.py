"""How long a submission that hangs takes to grade, against the reference, side by side in one run.

The hung submission is the reference with a load generator that never exits and a gateway that
listens but never answers (tests/slow_and_hung.py); its tests, sizing, manifests and memo are the
reference's. Both are graded whole with `--sandboxes 2`, as `make demo` does. The target: the hung one
in at most twice the reference's time, every hung criterion failed with a finding that says so.

    python -m bench.hang
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import tempfile
import time
from pathlib import Path

from bench import results_dir
from grader.grading.grade import GradeRequest, grade

ROOT = Path(__file__).resolve().parent.parent
RESULTS = results_dir() / "hang.json"
sys.path.insert(0, str(ROOT / "tests"))

from slow_and_hung import REFERENCE, hung


def _grade(folder: Path, out: Path, only: tuple[str, ...] = ()) -> dict[str, float]:
    started = time.perf_counter()
    result = grade(GradeRequest(folder, out, only=only, sandboxes=2, echo=lambda _: None))
    took = time.perf_counter() - started
    hung_findings = sum("hung" in c.output for c in result.criteria)
    return {
        "score": result.score,
        "max_score": result.max_score,
        "seconds": round(took, 1),
        "criteria_saying_hung": hung_findings,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", action="append", default=[], help="grade this part only (a quick try; repeatable)")
    only = tuple(parser.parse_args().only)
    with tempfile.TemporaryDirectory(prefix="bench-hang-") as tmp:
        rows = {
            "reference": _grade(REFERENCE, Path(tmp) / "reference", only),
            "hung": _grade(hung(Path(tmp) / "hung"), Path(tmp) / "hung-report", only),
        }
    ratio = float(rows["hung"]["seconds"]) / float(rows["reference"]["seconds"])
    for name, row in rows.items():
        print(
            f"{name:>9}: {row['score']:g}/{row['max_score']:g} in {row['seconds']} s "
            f"({row['criteria_saying_hung']} criteria say what hung)"
        )
    print(f"hung / reference: {ratio:.2f} (target <= 2)")
    RESULTS.parent.mkdir(exist_ok=True)
    RESULTS.write_text(
        json.dumps(
            {
                "command": "python -m bench.hang" + "".join(f" --only {o}" for o in only),
                "machine": f"{platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}",
                "load_average_at_start": os.getloadavg()[0],
                "grades": rows,
                "hung_over_reference": round(ratio, 2),
            },
            indent=1,
        )
        + "\n"
    )


if __name__ == "__main__":
    main()
