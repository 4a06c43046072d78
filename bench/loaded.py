"""Grading on a loaded machine: both cores kept busy by another process while the grader runs.

Every criterion must grade as it does on an idle machine or say `inconclusive`, never a wrong pass
or fail. Each timing criterion's report entry carries its margin (the worst error over the
tolerance; below 0.7 or above 1.5 the answer stands, in between the run is repeated; on a machine
seen to be too busy the band is 1-8, docs/grading.md) and whether the machine was judged busy:
this records both idle and loaded, side by side.

`python -m bench.loaded` grades the reference on every criterion idle, then loaded, and runs
`grader selftest` loaded, and writes bench/results/loaded.json. tests/rooms/grading/test_loaded_machine.py
runs a small variant. The busy process is bounded in time and killed by its id at the end.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from bench import results_dir
from grader.grading.grade import GradeRequest, grade

ROOT = Path(__file__).resolve().parents[1]
_BURN = (
    "import multiprocessing as mp, sys, time\n"
    "def spin(until):\n    while time.monotonic() < until: pass\n"
    "until = time.monotonic() + float(sys.argv[1])\n"
    "procs = [mp.Process(target=spin, args=(until,)) for _ in range(int(sys.argv[2]))]\n"
    "[p.start() for p in procs]; [p.join() for p in procs]\n"
)


@contextlib.contextmanager
def busy_cores(cores: int | None = None, *, max_s: float = 3600) -> Iterator[int]:
    """Keep `cores` (default: all) busy with spinning processes for at most `max_s`; yields the pid."""
    n = cores or os.cpu_count() or 2
    proc = subprocess.Popen([sys.executable, "-c", _BURN, str(max_s), str(n)], start_new_session=True)
    try:
        time.sleep(0.5)
        yield proc.pid
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)  # the group this function started, by its id
        proc.wait()


def margins(report: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """criterion id -> status, attempts, margin (None for a criterion without a timing check) and
    why the machine was judged too busy, if it was, all as the report records them."""
    return {
        c["id"]: {
            "status": c["status"],
            "attempts": c["attempts"],
            "tolerance": c["tolerance"],
            "margin": c.get("margin"),
            "busy": c.get("busy"),
        }
        for c in report["extra_data"]["kit"]["criteria"]
    }


def grade_reference(out: Path, only: tuple[str, ...] = ()) -> dict[str, Any]:
    grade(GradeRequest(ROOT / "submissions" / "reference", out, only=only, sandboxes=1, echo=lambda _: None))
    report: dict[str, Any] = json.loads((out / "report.json").read_text())
    return report


def wrong_on_reference(report: dict[str, Any]) -> list[str]:
    """Criteria the reference did not pass and that are not `inconclusive`: a wrong answer."""
    return [
        f"{c['id']}: {c['status']}: " + " / ".join(c["output"].splitlines()[:6])
        for c in report["extra_data"]["kit"]["criteria"]
        if c["status"] not in ("passed", "inconclusive")
    ]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--out", type=Path, default=results_dir() / "loaded.json")
    parser.add_argument("--no-selftest", action="store_true", help="Skip the loaded selftest (the longest part).")
    parser.add_argument("--only", action="append", default=[], help="grade this part only (a quick try; repeatable)")
    args = parser.parse_args()
    only = tuple(args.only)
    from grader.kit.selftest import selftest

    with tempfile.TemporaryDirectory(prefix="bench-loaded-") as tmp:
        idle = grade_reference(Path(tmp) / "idle", only)
        with busy_cores():
            loaded = grade_reference(Path(tmp) / "loaded", only)
            findings = [] if args.no_selftest else selftest(jobs=2, echo=print)
    idle_m, loaded_m = margins(idle), margins(loaded)
    rows = {cid: {"idle": idle_m[cid], "loaded": loaded_m[cid]} for cid in idle_m}
    wrong_loaded = wrong_on_reference(loaded)
    result: dict[str, Any] = {
        "command": "python -m bench.loaded"
        + " --no-selftest" * args.no_selftest
        + "".join(f" --only {o}" for o in only),
        "cores": os.cpu_count(),
        "reference_wrong_idle": wrong_on_reference(idle),
        "reference_wrong_loaded": wrong_loaded,
        "criteria": rows,
        "selftest_loaded": [
            {"name": f.name, "ok": f.ok, "inconclusive": f.inconclusive, "lines": f.lines} for f in findings
        ],
    }
    args.out.write_text(json.dumps(result, indent=2) + "\n")
    print(f"{'criterion':<34} {'idle':>22} {'loaded':>22}")
    for cid, row in rows.items():
        if row["idle"]["margin"] is not None or row["loaded"]["margin"] is not None:
            cells = [
                f"{r['status']} {r['margin']}{' x2' if r['attempts'] > 1 else ''}" for r in (row["idle"], row["loaded"])
            ]
            print(f"{cid:<34} {cells[0]:>22} {cells[1]:>22}")
    wrong = wrong_loaded + [f.name for f in findings if not f.ok]
    print("wrong under load: " + (", ".join(wrong) if wrong else "none"))
    raise SystemExit(1 if wrong else 0)


if __name__ == "__main__":
    main()
