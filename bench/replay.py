"""`grader replay` of every chaff's every target: the same verdict and the same failing requests as its grade.

For each chaff and each criterion it targets, the chaff is built and the criterion replayed from
nothing (`grading/replay.py`: the grade's engine in the sandbox, seed 0); the verdict is compared
with the one its recorded grade gives (tests/fixtures/runs/, `make fixtures`, also seed 0): the same
status, and for the load generator and the gateway the same failing requests or cases on the runs the
recorded grade made (most chaff are recorded without the unseen variants a replay draws). The wall
time of each replay is kept, by section, against the targets: a load-generator criterion in at most
10 s, a gateway criterion in at most 30 s. Replays make their runs `--sandboxes` at once (as `grader
replay` does); a criterion judged from every run of its section, variants included, is also replayed
one run at a time, side by side (`one_at_a_time_s`). A replay over its limit is timed again as
`grader replay REPORT_DIR` runs it: on the scenarios or cases that failed it in the grade
(`narrowed_s`), and compared again.

    python -m bench.replay [--sandboxes N] [--only CHAFF ...]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import sys
import tempfile
from pathlib import Path
from typing import NotRequired, TypedDict

from bench import results_dir
from grader.grading.replay import SPREAD, failing_in, failing_runs, on_runs_of, replay
from grader.kit.chaff import list_chaff, materialize
from grader.records.book import RecordBook
from grader.rubric import Criterion, Rubric, load_rubric

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = ROOT / "tests" / "fixtures" / "runs"
RESULTS = results_dir() / "replay.json"
LIMITS_S = {"loadgen": 10.0, "gateway": 30.0}


class Row(TypedDict):
    """One replay of one chaff's target, as replay.json's rows hold it."""

    chaff: str
    criterion: str
    deliverable: str
    replayed: str
    graded: str
    same: bool
    seconds: float
    one_at_a_time_s: NotRequired[float]  # a criterion judged from every run, replayed one run at a time too
    one_at_a_time_same: NotRequired[bool]
    narrowed_to: NotRequired[list[str]]  # a replay over its limit, again on the runs that failed it
    narrowed_s: NotRequired[float]
    narrowed_same: NotRequired[bool]


def recorded(chaff: str, criterion_id: str) -> tuple[RecordBook, str, list[str]]:
    """The chaff's recorded grade, and the status and failing requests (or cases) it gives the criterion."""
    book = RecordBook.read(FIXTURES / chaff)
    return (book, *failing_in(book, load_rubric(), criterion_id))


def of_every_run(criterion: Criterion, rubric: Rubric) -> bool:
    """Judged from every run of its section: all the load generator's scenarios, or every gateway case."""
    if criterion.deliverable == "loadgen":
        return set(criterion.scenarios) == set(rubric.scenarios)
    return criterion.deliverable == "gateway" and not criterion.cases


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", nargs="*", default=[], help="these chaff only")
    parser.add_argument("--sandboxes", type=int, default=SPREAD, help="runs a replay makes at once")
    args = parser.parse_args()
    rubric = load_rubric()
    rows: list[Row] = []
    with tempfile.TemporaryDirectory(prefix="bench-replay-") as tmp:
        for chaff in list_chaff(ROOT / "submissions" / "chaff"):
            if (args.only and chaff.name not in args.only) or chaff.scores_nothing:
                continue
            folder = materialize(chaff.path, Path(tmp) / chaff.name)
            for target in chaff.targets:
                deliverable = rubric.criterion(target).deliverable
                done = replay(folder, target, Path(tmp) / "out" / chaff.name / target, seed=0, sandboxes=args.sandboxes)
                book, status, failing = recorded(chaff.name, target)
                same = done.status == status and (
                    deliverable not in ("loadgen", "gateway") or on_runs_of(book, done.failing) == failing
                )
                row: Row = {
                    "chaff": chaff.name,
                    "criterion": target,
                    "deliverable": deliverable,
                    "replayed": done.status,
                    "graded": status,
                    "same": same,
                    "seconds": round(done.seconds, 2),
                }
                mark = "same" if same else f"DIFFERENT (graded {status} on {failing}, replayed {done.failing})"
                if of_every_run(rubric.criterion(target), rubric) and args.sandboxes > 1:
                    one = replay(folder, target, Path(tmp) / "one" / chaff.name / target, seed=0, sandboxes=1)
                    row.update(
                        {
                            "one_at_a_time_s": round(one.seconds, 2),
                            "one_at_a_time_same": one.status == status and on_runs_of(book, one.failing) == failing,
                        }
                    )
                    mark += f"; one at a time {one.seconds:.1f} s" + ("" if row["one_at_a_time_same"] else " DIFFERENT")
                if done.seconds > LIMITS_S.get(deliverable, float("inf")):
                    runs = failing_runs(RecordBook.read(FIXTURES / chaff.name), rubric, target)
                    again = replay(
                        folder,
                        target,
                        Path(tmp) / "narrowed" / chaff.name / target,
                        seed=0,
                        runs=runs,
                        sandboxes=args.sandboxes,
                    )
                    row.update(
                        {
                            "narrowed_to": list(runs),
                            "narrowed_s": round(again.seconds, 2),
                            "narrowed_same": again.status == status and on_runs_of(book, again.failing) == failing,
                        }
                    )
                    mark += f"; on the {len(runs)} that failed it: {again.seconds:.1f} s, " + (
                        "same" if row["narrowed_same"] else f"DIFFERENT ({again.failing})"
                    )
                rows.append(row)
                print(f"{chaff.name:<36} {target:<32} {done.status:<12} {done.seconds:5.1f} s  {mark}", flush=True)
    by_section: dict[str, dict[str, float | dict[str, float]]] = {}
    for deliverable in sorted({r["deliverable"] for r in rows}):
        times = [r["seconds"] for r in rows if r["deliverable"] == deliverable]
        narrowed = [r.get("narrowed_s", r["seconds"]) for r in rows if r["deliverable"] == deliverable]
        by_section[deliverable] = {
            "replays": len(times),
            "median_s": round(statistics.median(times), 2),
            "max_s": max(times),
            "limit_s": LIMITS_S.get(deliverable, 0.0),
            "over_limit": sum(t > LIMITS_S.get(deliverable, float("inf")) for t in times),
            "max_from_report_s": max(narrowed),
        }
        pairs = [
            (r["one_at_a_time_s"], r["seconds"])
            for r in rows
            if r["deliverable"] == deliverable and "one_at_a_time_s" in r
        ]
        if pairs:
            by_section[deliverable]["of_every_run"] = {
                "replays": len(pairs),
                "one_at_a_time_median_s": statistics.median(one for one, _ in pairs),
                "at_once_median_s": statistics.median(now for _, now in pairs),
                "speedup_median": round(statistics.median(one / now for one, now in pairs), 2),
            }
    result = {
        "command": "python -m bench.replay"
        + (f" --sandboxes {args.sandboxes}" if args.sandboxes != SPREAD else "")
        + (f" --only {' '.join(args.only)}" if args.only else ""),
        "jobs": args.sandboxes,
        "machine": f"{platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}",
        "load_average_at_end": os.getloadavg()[0],
        "replays": len(rows),
        "same": sum(r["same"] for r in rows),
        "narrowed_same": sum(r.get("narrowed_same", True) for r in rows),
        "one_at_a_time_same": sum(r.get("one_at_a_time_same", True) for r in rows),
        "by_section": by_section,
        "rows": rows,
    }
    if not args.only or os.environ.get("BENCH_RESULTS"):  # a part alone never overwrites the recorded whole
        RESULTS.write_text(json.dumps(result, indent=1) + "\n", encoding="utf-8")
    print(json.dumps({k: v for k, v in result.items() if k != "rows"}, indent=1))
    sys.exit(0 if result["same"] == result["narrowed_same"] == result["replays"] else 1)


if __name__ == "__main__":
    main()
