"""The reference graded again and again beside CPU hogs: no false fail, and nothing left undecided.

A grade (or a candidate's `grader check`) shares its machine with whatever else runs there. Here H processes
spin at the grader's own priority (`--hogs`, default 3 on a 2-core machine: more work than cores) while the
reference is graded K times in a row (`--grades`), each with a seed of its own. Every grade's criteria that
did not pass are recorded with their output, and counted as wrong (failed) or undecided (inconclusive). With
`--against CHECKOUT` another checkout grades beside the same hogs, alternating with this one, so an earlier
grader and this one are compared on the same machine in the same minutes. With `--check`, each run is the
candidate's `grader check` (public criteria only) instead of a grade; with `--kit VENV`, the `grader` of a
kit installed elsewhere (a bundle's `.venv`) runs it.

    python -m bench.beside_hogs --grades 20
    python -m bench.beside_hogs --grades 10 --against ../before --only loadgen.ttft --only loadgen.cut
    python -m bench.beside_hogs --check --grades 5 --kit /tmp/takehome/.venv

A grade that did not pass every criterion keeps its reports and run records (`--keep`, default
$TMPDIR/bench-hogs-kept/LABEL-SEED), so the variant that failed and its timeline can be read afterwards.

Every hog is bounded in time and killed by its process group at the end.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from bench import add_keep_option, results_dir
from bench.loaded import busy_cores

ROOT = Path(__file__).resolve().parents[1]


def _grader(checkout: Path, kit: Path | None) -> list[str]:
    """How to run `grader` for this checkout (its own .venv when it has one), or from an installed kit."""
    if kit is not None:
        return [str(kit / "bin" / "grader")]
    own = checkout / ".venv" / "bin" / "python"
    return [str(own) if own.is_file() else sys.executable, "-m", "grader.cli"]


def one(checkout: Path, label: str, seed: int, args: argparse.Namespace, out: Path) -> dict[str, Any]:
    """One grade (or check) of the reference; what it scored and every criterion that did not pass."""
    only = [arg for o in args.only for arg in ("--only", o)]
    reference = checkout / "submissions" / "reference"
    if args.check:
        argv = [*_grader(checkout, args.kit), "check", str(reference), "--out", str(out), "--seed", str(seed)]
    else:
        argv = [*_grader(checkout, args.kit), "grade", str(reference), "--out", str(out), "--seed", str(seed)]
    started = time.monotonic()
    done = subprocess.run(
        [*argv, *only, "--sandboxes", str(args.sandboxes)],
        cwd=checkout,
        capture_output=True,
        text=True,
        timeout=3600,
        check=False,
    )
    took = time.monotonic() - started
    report = json.loads((out / "report.json").read_text()) if (out / "report.json").is_file() else None
    if report is None:
        return {
            "checkout": label,
            "seed": seed,
            "exit": done.returncode,
            "seconds": round(took, 1),
            "error": (done.stdout + done.stderr)[-2000:],
        }
    criteria = report["extra_data"]["kit"]["criteria"]
    total = next((line for line in done.stdout.splitlines() if line.startswith("public criteria only:")), "")
    return {
        "checkout": label,
        "seed": seed,
        "exit": done.returncode,
        "seconds": round(took, 1),
        "score": report["score"],
        "max_score": report["max_score"],
        "printed_total": total,
        "load_average": round(os.getloadavg()[0], 2),
        "wrong": {c["id"]: c["output"][:600] for c in criteria if c["status"] not in ("passed", "inconclusive")},
        "undecided": {c["id"]: c["output"][:600] for c in criteria if c["status"] == "inconclusive"},
        "reruns": [c["id"] for c in criteria if c.get("attempts", 1) > 1],
        **_kept(out, label, seed, [c for c in criteria if c["status"] != "passed"], args),
    }


def _kept(
    out: Path, label: str, seed: int, not_passed: list[dict[str, Any]], args: argparse.Namespace
) -> dict[str, str]:
    """A grade with a criterion that did not pass keeps its reports and run records (where the variant that failed
    and its timeline are): the grade's folder is a temporary one, and the figures keep only the output."""
    if not not_passed or args.keep is None:
        return {}
    dest = args.keep / f"{label}-{seed}"
    shutil.rmtree(dest, ignore_errors=True)
    shutil.copytree(out, dest)
    return {"kept": str(dest)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--grades", type=int, default=20, help="grades (or checks) per checkout")
    parser.add_argument("--hogs", type=int, default=3, help="spinning processes beside them")
    parser.add_argument("--only", action="append", default=[], help="grade these criteria or parts only")
    parser.add_argument("--sandboxes", type=int, default=2)
    parser.add_argument("--check", action="store_true", help="run `grader check`, not `grader grade`")
    parser.add_argument("--kit", type=Path, help="the virtual environment of an installed kit to run")
    parser.add_argument("--against", type=Path, metavar="CHECKOUT", help="another checkout, graded alternately")
    parser.add_argument("--out", type=Path, default=None, help="where to write the figures")
    add_keep_option(parser, "bench-hogs-kept")
    args = parser.parse_args()
    if args.against is not None and not (args.against / "grader").is_dir():
        parser.error(f"--against {args.against}: not a checkout of the kit (no grader/ in it)")
    trees = [(ROOT, "this")] + ([(args.against.resolve(), "other")] if args.against else [])
    rows = []
    with tempfile.TemporaryDirectory(prefix="bench-hogs-") as tmp, busy_cores(args.hogs, max_s=4 * 3600):
        for i in range(args.grades):
            for tree, label in trees:
                row = one(tree, label, 1000 + i, args, Path(tmp) / f"{label}-{i}")
                rows.append(row)
                print(
                    f"{label} #{i + 1}: {row.get('score', '?')}/{row.get('max_score', '?')} in {row['seconds']} s, "
                    f"wrong {sorted(row.get('wrong', {})) or 'none'}, undecided {sorted(row.get('undecided', {})) or 'none'}",
                    flush=True,
                )
    summary = {
        label: {
            "grades": sum(1 for r in rows if r["checkout"] == label),
            "with_a_wrong_criterion": sum(
                1 for r in rows if r["checkout"] == label and (r.get("wrong") or "error" in r)
            ),
            "with_an_undecided_criterion": sum(1 for r in rows if r["checkout"] == label and r.get("undecided")),
            "full_marks": sum(1 for r in rows if r["checkout"] == label and r.get("score") == r.get("max_score")),
        }
        for _, label in trees
    }
    command = "python -m bench.beside_hogs" + f" --grades {args.grades} --hogs {args.hogs}" + " --check" * args.check
    command += "".join(f" --only {o}" for o in args.only) + (" --against CHECKOUT" if args.against else "")
    command += " --kit VENV" * (args.kit is not None)
    out = args.out or results_dir() / ("beside_hogs_check.json" if args.check else "beside_hogs.json")
    other = ""
    if args.against is not None:
        other = subprocess.run(
            ["git", "rev-parse", "--short", "HEAD"], cwd=args.against, capture_output=True, text=True, check=False
        ).stdout.strip()
    out.write_text(
        json.dumps(
            {
                "command": command,
                "machine": f"{platform.machine()}, {platform.python_version()}",
                "cores": os.cpu_count(),
                "other": other,
                "summary": summary,
                "runs": rows,
            },
            indent=1,
        )
        + "\n"
    )
    print(json.dumps(summary, indent=1))


if __name__ == "__main__":
    main()
