"""Grading with both cores kept busy by another process: every criterion grades as on an idle
machine or says `inconclusive`, never a wrong pass or fail.

A small variant of `python -m bench.loaded` (which grades the reference on every criterion and runs
the whole selftest under the same load, and records each timing criterion's margin): the
reference on timing criteria of the load generator and the gateway, and one chaff whose defect is
a timing one, graded with two spinning processes running beside them.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from bench.loaded import busy_cores, grade_reference, margins, wrong_on_reference
from grader.kit.selftest import selftest

pytestmark = pytest.mark.slow

TIMED = ("loadgen.ttft", "loadgen.role-chunk", "loadgen.tps", "gateway.streaming")


def test_a_busy_machine_never_turns_a_timing_criterion_into_a_wrong_answer(tmp_path: Path) -> None:
    with busy_cores(2, max_s=300):
        report = grade_reference(tmp_path / "reference", only=TIMED)
        (finding,) = selftest(names=("ttft-from-role-chunk",), jobs=1, echo=lambda _: None)
    assert wrong_on_reference(report) == []
    found = margins(report)
    assert set(found) == set(TIMED) and {m["status"] for m in found.values()} <= {"passed", "inconclusive"}, found
    assert finding.ok, finding.lines  # its target lost, nothing else lost; inconclusive is listed, not wrong
