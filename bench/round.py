"""What the round's summary costs with its similarity check and item analysis, by the round's size.

For each N a synthetic round is built by `tests/round_builder.py DEST --size N` (the reference, the
independent submission, disguised copies, the skeleton, the chaff, then more disguised copies), its
report folders re-judged from recorded runs. Then the summary of that round is made three ways, each
timed on its own in this process: the ranking alone (grades.csv, index.html: what the summary was
before), with the item analysis, and with the item analysis and the similarity check (every pair in
four deliverables, each submission against the kit's reference and chaff, the side-by-side pages of
the flagged pairs), `--jobs 2`. Also recorded for the threshold: the lowest score of a copy against
what it copied and the highest score of a pair that shares no copied code, per deliverable.

    python -m bench.round [--sizes 20,50,100]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from bench import results_dir
from grader.round.analysis import analyse
from grader.round.summary import read_rows, write_index

ROOT = Path(__file__).resolve().parent.parent
RESULTS = results_dir() / "round.json"


def _family(member: dict[str, str] | None, deliverable: str) -> str:
    """Whose code a member's deliverable is: R (the reference's line), I (the independent one's), S (the starter)."""
    if member is None:  # a leak: the reference or a chaff
        return "R"
    kind = member["kind"]
    if kind in ("reference", "disguised", "chaff"):
        return "R"
    if kind == "gateway-copy":
        return "R" if deliverable == "gateway" else "S"
    if kind in ("independent", "independent-copy"):
        return "I" if deliverable == "loadgen" else "S"
    return "S"


def measure(size: int, jobs: int) -> dict[str, object]:
    with tempfile.TemporaryDirectory(prefix="bench-round-") as tmp:
        root = Path(tmp) / "round"
        t0 = time.perf_counter()
        subprocess.run(
            [sys.executable, str(ROOT / "tests" / "round_builder.py"), str(root), "--size", str(size)],
            check=True,
            capture_output=True,
            cwd=ROOT,
        )
        built = time.perf_counter() - t0
        members = json.loads((root / "members.json").read_text())
        out = root / "grades"
        t0 = time.perf_counter()
        rows = read_rows(out)
        write_index(rows, out)
        ranking = time.perf_counter() - t0
        t0 = time.perf_counter()
        rows = read_rows(out)
        write_index(rows, out, analyse(out, rows, threshold=None))
        items = time.perf_counter() - t0
        t0 = time.perf_counter()
        rows = read_rows(out)
        analysis = analyse(out, rows, jobs=jobs)
        compared = time.perf_counter() - t0
        write_index(rows, out, analysis)
        full = time.perf_counter() - t0
        assert analysis.similarity is not None
        copies: dict[str, float] = {}
        honest: dict[str, float] = {}
        for p in analysis.similarity.pairs:
            if p.deliverable == "memo" and "independent" in (
                members.get(p.a, {}).get("runs"),
                members.get(p.b, {}).get("runs"),
            ):
                continue  # the independent submission's memo is its load generator's code, read as prose
            fa, fb = _family(members.get(p.a), p.deliverable), _family(members.get(p.b), p.deliverable)
            if fa == fb and fa != "S":
                copies[p.deliverable] = min(copies.get(p.deliverable, 1.0), p.score)
            else:
                honest[p.deliverable] = max(honest.get(p.deliverable, 0.0), p.score)
        pages = len(list((out / "similarity").glob("*.html")))
        return {
            "size": size,
            "pairs_in_round": size * (size - 1) // 2,
            "pairs_scored": len(analysis.similarity.pairs),
            "flagged": len(analysis.similarity.flagged()),
            "pages": pages,
            "build_s": round(built, 2),
            "ranking_s": round(ranking, 3),
            "with_items_s": round(items, 3),
            "similarity_compare_s": round(compared, 2),
            "with_items_and_similarity_s": round(full, 2),
            "lowest_copy": {d: round(v, 4) for d, v in sorted(copies.items())},
            "highest_honest": {d: round(v, 4) for d, v in sorted(honest.items())},
        }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="20,50,100")
    parser.add_argument("--jobs", type=int, default=2)
    args = parser.parse_args()
    runs = []
    for size in (int(s) for s in args.sizes.split(",")):
        result = measure(size, args.jobs)
        print(json.dumps(result), flush=True)
        runs.append(result)
    RESULTS.write_text(
        json.dumps(
            {
                "command": "python -m bench.round " + " ".join(sys.argv[1:]),
                "python": platform.python_version(),
                "machine": platform.machine(),
                "cpus": os.cpu_count(),
                "runs": runs,
            },
            indent=1,
        )
        + "\n"
    )
    print(RESULTS)


if __name__ == "__main__":
    main()
