"""Grade every hostile submission in every row this machine can make, and print the matrix as Markdown.

    python tests/hostile/matrix_table.py            # the cases CI grades in each row, ~1 min
    python tests/hostile/matrix_table.py --full     # every case, the never-ending ones too, ~8 min

Each cell is what the program met there, from its report (the criterion's reason and the script's
own findings); a cell that fails a check of hostile_cases.grade_case says FAILED and why. The table
in grader/sandbox/README.md is this script's output. Rows that cannot be made here are left out,
with the reason on stderr.
"""

from __future__ import annotations

import re
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from hostile_cases import CASES, NEVER_ENDING, SLOW, Case, grade_case
from hosts import ROWS, unavailable
from test_hostile_matrix import CHEAP


def _cell(case: Case, output: str, found: dict[str, Any] | None) -> str:
    if "no candidate code was run" in output:
        return "not run: uid and gid 65534 unmapped, said in one line"
    f = found or {}
    by_behaviour = {
        "fork_bomb": lambda: f"{f['forked']} forks, then {f['refused']}",
        "kill_parent": lambda: "kill: " + ", ".join(sorted(set(f["tried"].values()))),
        "signal_all": lambda: f"{len(f['delivered'])} delivered, {f['refused']} refused",
        "read_secrets": lambda: f"{sum(v == 'read' for v in f['found'].values())} of {len(f['found'])} read",
        "admin": lambda: "/admin: " + ", ".join(sorted({str(v) for v in f["answers"].values()})),
        "write_outside": lambda: f"{sum(v == 'written' for v in f['written'].values())} of {len(f['written'])} written",
        "fill_disk": lambda: f"{f['written_mib']} MiB, then {f['error']}",
        "connections": lambda: f"{f['opened']} opened, then {f['error']}",
        "network": lambda: "interfaces: " + ", ".join(f["interfaces"]),
    }
    if case.behaviour in by_behaviour and found is not None:
        return by_behaviour[case.behaviour]()
    for words, said in [
        ("MemoryError", "MemoryError (RLIMIT_AS)"),
        ("memory limit", "killed: memory limit"),
        ("output cap", "killed: output cap"),
        ("cpu limit", "killed: CPU limit"),
        ("wall timeout", "killed: wall timeout"),
        ("nothing listened", "nothing listened in 20 s"),
    ]:
        if words in output:
            return said
    if case.behaviour == "daemon":
        return "daemon gone at the command's end"
    first = output.strip().splitlines()[0] if output.strip() else "no output"
    return re.sub(r"\s+", " ", first)[:60]


def _grade(case: Case, row: str) -> str:
    with tempfile.TemporaryDirectory(prefix="grader-matrix-table-") as folder:
        try:
            return _cell(case, *grade_case(case, row, Path(folder)))
        except AssertionError as exc:
            return "FAILED: " + re.sub(r"\s+", " ", str(exc))[:80]


def main(full: bool) -> None:
    rows = []
    for row in ROWS:
        if why := unavailable(row):
            print(f"{row} left out: {why}", file=sys.stderr)
        else:
            rows.append(row)
    cases = CASES + NEVER_ENDING + SLOW if full else [c for c in CASES if any(c.id in ids for ids in CHEAP.values())]
    started = time.monotonic()
    table: dict[str, dict[str, str]] = {case.id: {} for case in cases}
    for row in rows:
        side_by_side = [c for c in cases if c in NEVER_ENDING + SLOW]
        with ThreadPoolExecutor(max_workers=2) as pool:
            futures = {c.id: pool.submit(_grade, c, row) for c in side_by_side}
            for case in cases:
                if case not in side_by_side:
                    table[case.id][row] = _grade(case, row)
            for case_id, future in futures.items():
                table[case_id][row] = future.result()
    print("| program | " + " | ".join(f"`{row}`" for row in rows) + " |")
    print("| --- |" + " --- |" * len(rows))
    for case in cases:
        print(f"| `{case.id}` | " + " | ".join(table[case.id][row] for row in rows) + " |")
    print(f"\n({len(cases)} programs x {len(rows)} rows in {time.monotonic() - started:.0f} s)", file=sys.stderr)


if __name__ == "__main__":
    main("--full" in sys.argv[1:])
