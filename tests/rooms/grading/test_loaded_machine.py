"""Grading on a core kept busy by another process: every criterion grades as on an idle machine or
says `inconclusive`, never a wrong pass or fail.

A small variant of `python -m bench.loaded` (which grades the reference on every criterion and runs
the whole selftest with every core kept busy, and records each timing criterion's margin): the
reference on timing criteria of the load generator and the gateway, and one chaff whose defect is
a timing one, graded with a spinning process beside them. Grade and spinner share one core (the
test pins itself, and so all it starts, to it): harder on the grade than two spinners on two
cores, and the suite's other tests keep the other core.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from bench.loaded import busy_cores, grade_reference, margins, wrong_on_reference
from grader.kit.selftest import selftest

pytestmark = pytest.mark.slow

TIMED = ("loadgen.ttft", "loadgen.role-chunk", "loadgen.tps", "gateway.streaming")


@contextlib.contextmanager
def one_core() -> Iterator[None]:
    """This thread, and the threads and processes it starts, on one core until the block ends."""
    before = os.sched_getaffinity(0)
    os.sched_setaffinity(0, {min(before)})
    try:
        yield
    finally:
        os.sched_setaffinity(0, before)


@pytest.mark.rotating(48)
def test_a_busy_machine_never_turns_a_timing_criterion_into_a_wrong_answer(tmp_path: Path) -> None:
    with one_core(), busy_cores(1, max_s=300):
        report = grade_reference(tmp_path / "reference", only=TIMED)
        (finding,) = selftest(names=("ttft-from-role-chunk",), jobs=1, echo=lambda _: None)
    assert wrong_on_reference(report) == []
    found = margins(report)
    assert set(found) == set(TIMED) and {m["status"] for m in found.values()} <= {"passed", "inconclusive"}, found
    assert finding.ok, finding.lines  # its target lost, nothing else lost; inconclusive is listed, not wrong
