"""The hostile submissions graded under each other way the grader can be hosted (hosts.py): a cgroup2
mount whose hierarchy lacks the pids and memory controllers, cgroups made read-only, an
unprivileged user namespace mapping 65,536 uids (a pod with hostUsers: false), and one mapping
root alone. The cgroup-v1 row (this machine as it is) is test_hostile_submissions.py.

Each graded case ends in a report, leaves nothing running, writes nothing outside and reads no
secret, and its report's sandbox line names what the row enforced (hostile_cases.ROW_LINES). Where
root alone is mapped the sandbox refuses in one line and runs nothing.

CI grades the cases where the rows differ (processes, memory, cleanup, the uid boundary, the
filesystem) in each row; `make hostile-full` (HOSTILE_FULL=1) grades every case in every row,
the never-ending and slow ones included. The README beside the sandbox (grader/sandbox/README.md)
tables the outcomes.
"""

from __future__ import annotations

import os
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
from hostile_cases import BY_ID, CASES, NEVER_ENDING, SLOW, Case, grade_case
from hosts import unavailable

FULL = os.environ.get("HOSTILE_FULL") == "1"
ROWS = ["cgroup-v2", "cgroups-ro", "userns-65536", "userns-root"]
# In CI, what each row changes: who holds processes and memory and ends a command's processes
# (cgroup v2, rlimits, a sweep of the uid), and, in a user namespace, the uid boundary and files.
CHEAP = {
    "cgroup-v2": ["fork_bomb-loadgen", "daemon-loadgen", "kill_parent-loadgen"],
    "cgroups-ro": ["fork_bomb-loadgen", "memory_hog-loadgen", "daemon-loadgen", "read_secrets-loadgen"],
    "userns-65536": [
        "fork_bomb-loadgen",
        "daemon-loadgen",
        "kill_parent-loadgen",
        "signal_all-loadgen",
        "read_secrets-loadgen",
        "write_outside-loadgen",
    ],
    "userns-root": ["read_secrets-loadgen"],  # nothing runs there: one grade shows it
}


def _pairs() -> list[tuple[str, Case]]:
    pairs = []
    for row in ROWS:
        ids = [case.id for case in CASES] if FULL else CHEAP[row]
        pairs += [(row, BY_ID[i]) for i in ids]
    return pairs


def _skip_unless_made(row: str) -> None:
    if why := unavailable(row):
        pytest.skip(f"{row}: {why}")


@pytest.mark.slow
@pytest.mark.sampled(4)  # a sample each run (tests/sampling.py)
@pytest.mark.rotating(40)
@pytest.mark.parametrize(("row", "case"), _pairs(), ids=lambda value: value if isinstance(value, str) else value.id)
def test_a_hostile_submission_in_each_row(row: str, case: Case, tmp_path: Path) -> None:
    _skip_unless_made(row)
    grade_case(case, row, tmp_path)


@pytest.mark.slow
@pytest.mark.skipif(not FULL, reason="20 to 120 s a row: make hostile-full (HOSTILE_FULL=1)")
@pytest.mark.parametrize("row", ROWS)
@pytest.mark.parametrize("cases", [NEVER_ENDING, SLOW], ids=["never-ending-gateway", "never-ending-loadgen"])
def test_submissions_that_never_end_in_each_row(row: str, cases: list[Case], tmp_path: Path) -> None:
    """Graded side by side: a gateway that never listens costs its 20 s start timeout, a load
    generator that never ends its CPU limit or the 90 s wall clock."""
    _skip_unless_made(row)
    with ThreadPoolExecutor(max_workers=len(cases)) as pool:
        futures = [pool.submit(grade_case, case, row, tmp_path / case.id) for case in cases]
        for future in futures:
            future.result()
