"""Correct clients at every corner of the brief's published domains, beside CPU hogs: no false fail anywhere.

The brief publishes the domain of every setting the unseen variants may draw (TASK.md, "Unseen variants"), so a
correct client must be graded correct at any point of it, the far corners included: 2,000 tokens/s with 8 tokens
a chunk and 16 streams (a whole stream lasts a few milliseconds), 20 tokens/s with one token a chunk and one
stream (a request lasts seconds), one token or 64 asked. Here the baseline scenario is moved to each corner of
(token rate, tokens a chunk, concurrency, max tokens) and graded on the load-generator criteria that read it
(`loadgen.runs`, `ttft`, `tps`, `throughput`, `percentiles`, `summary`, `prompt-tokens`), for the reference,
the independent submission and the cold-start client, with `--hogs` spinning processes beside them.

    python -m bench.corners                    # 16 corners x 3 clients beside 2 hogs: bench/results/corners.json
    python -m bench.corners --clients reference --hogs 0

A corner's grade runs its public scenario alone (no variants), so it is exactly that corner. Every grade that did
not pass every criterion is listed with its criteria's output. Every hog is bounded in time and killed at the end.
"""

from __future__ import annotations

import argparse
import contextlib
import itertools
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

import yaml

from bench import add_keep_option, results_dir
from bench.loaded import busy_cores
from grader.grading.grade import GradeRequest, grade
from grader.rubric.domains import load_domains

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))
import cold_start

CRITERIA = (
    "loadgen.runs",
    "loadgen.ttft",
    "loadgen.tps",
    "loadgen.throughput",
    "loadgen.percentiles",
    "loadgen.summary",
    "loadgen.prompt-tokens",
)
#: Each dimension moved, by the name its domain has in grader/rubric/domains.yaml, and where it goes.
DIMENSIONS = {
    "token rate": "server.token_rate",
    "chunking": "server.tokens_per_chunk",
    "concurrency": "loadgen.concurrency",
    "max tokens": "loadgen.max_tokens",
}


def corners() -> list[dict[str, Any]]:
    """Every corner: each dimension at the low or the high end of its published domain."""
    domains = {d.name: d for d in load_domains()}
    ends = [(path, (int(domains[name].low or 0), int(domains[name].high or 0))) for name, path in DIMENSIONS.items()]
    return [dict(zip([p for p, _ in ends], values, strict=True)) for values in itertools.product(*[e for _, e in ends])]


def corner_rubric(corner: dict[str, Any], folder: Path) -> Path:
    """The kit's rubric with its baseline scenario moved to `corner`."""
    data = yaml.safe_load((ROOT / "grader" / "rubric" / "rubric.yaml").read_text(encoding="utf-8"))
    baseline = data["scenarios"]["baseline"]
    for where, value in corner.items():
        part, key = where.split(".")
        baseline[part][key] = value
    baseline["description"] = "The baseline at a corner of the published domains."
    path = folder / "rubric.yaml"
    path.write_text(yaml.safe_dump(data, sort_keys=False), encoding="utf-8")
    return path


def _label(corner: dict[str, Any]) -> str:
    return ", ".join(f"{path.split('.')[1]} {value}" for path, value in corner.items())


def _slug(corner: dict[str, Any]) -> str:
    return "-".join(str(v) for v in corner.values())


def one(
    client: str, submission: Path, corner: dict[str, Any], seed: int, scratch: Path, keep: Path | None = None
) -> dict[str, Any]:
    folder = Path(tempfile.mkdtemp(dir=scratch))
    started = time.perf_counter()
    result = grade(
        GradeRequest(
            submission,
            folder / "report",
            only=CRITERIA,
            seed=seed,
            rubric=corner_rubric(corner, folder),
            scenarios=("baseline",),
            with_variants=False,
            echo=lambda _: None,
        )
    )
    # a criterion its brief does not state (an earlier contract's client) is skipped, and is no failure
    judged = [c for c in result.criteria if c.status != "skipped"]
    wrong = [c for c in judged if c.status != "passed"]
    if wrong and keep is not None:
        shutil.copytree(folder / "report", keep / f"{client}-{_slug(corner)}", dirs_exist_ok=True)
    return {
        "client": client,
        "corner": _label(corner),
        "not_passed": {c.id: c.status for c in wrong},
        "why": {c.id: c.output for c in wrong},
        "margins": {c.id: c.margin for c in judged if c.margin is not None},
        "not_in_brief": [c.id for c in result.criteria if c.status == "skipped"],
        "seconds": round(time.perf_counter() - started, 1),
    }


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.corners", description=__doc__.split("\n")[0])
    parser.add_argument("--clients", default="reference,independent,cold-start")
    parser.add_argument("--hogs", type=int, default=2, help="spinning processes beside the grades")
    parser.add_argument("--seed", type=int, default=11)
    parser.add_argument("--corners", type=int, default=None, help="the first N corners only (a quick try)")
    parser.add_argument("--out", type=Path, default=None)
    add_keep_option(parser, "bench-corners-kept")
    args = parser.parse_args()
    rows = []
    with tempfile.TemporaryDirectory(prefix="bench-corners-") as tmp:
        scratch = Path(tmp)
        clients = {
            "reference": ROOT / "submissions" / "reference",
            "independent": ROOT / "tests" / "fixtures" / "independent_submission",
            "cold-start": cold_start.build(scratch / "cold-start"),
        }
        chosen = [c.strip() for c in args.clients.split(",") if c.strip()]
        unknown = [c for c in chosen if c not in clients]
        if unknown:
            parser.error(f"--clients {', '.join(unknown)}: unknown (known: {', '.join(clients)})")
        started = time.time()
        with busy_cores(args.hogs, max_s=3 * 3600) if args.hogs else contextlib.nullcontext():
            for client in chosen:
                for corner in corners()[: args.corners]:
                    row = one(client, clients[client], corner, args.seed, scratch, args.keep)
                    rows.append(row)
                    mark = "ok" if not row["not_passed"] else f"NOT PASSED {row['not_passed']}"
                    print(f"{client:<12} {row['corner']:<70} {row['seconds']:>6} s  {mark}", flush=True)
    failed = [r for r in rows if r["not_passed"]]
    summary = {
        "command": "python -m bench.corners"
        + f" --clients {args.clients} --hogs {args.hogs} --seed {args.seed}"
        + (f" --corners {args.corners}" if args.corners else ""),
        "date": time.strftime("%Y-%m-%d", time.gmtime(started)),
        "commit": subprocess.run(
            ["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True, check=False
        ).stdout.strip(),
        "machine": f"{platform.machine()}, {len(os.sched_getaffinity(0))} cores",
        "hogs": args.hogs,
        "criteria": list(CRITERIA),
        "grades": len(rows),
        "all_passed": len(rows) - len(failed),
        "not_passed": failed,
        "rows": rows,
    }
    out = args.out or results_dir() / "corners.json"
    out.write_text(json.dumps(summary, indent=1) + "\n", encoding="utf-8")
    print(f"{len(rows) - len(failed)} of {len(rows)} grades passed every criterion; {out}")


if __name__ == "__main__":
    main()
