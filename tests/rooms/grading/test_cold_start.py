"""A correct client's cold start fails nothing; a clock started before the client's own slot still does.

The cold-start client is the reference's with its first request's `start` 150 ms before its bytes
(tests/cold_start.py). Every criterion that reads `start` is judged on it: from its recorded runs in the
fast tier (tests/rooms/grading/test_recorded_runs.py also holds them whole), and graded live here once. The chaff that
starts the clock when a request joins its own queue (`ttft-includes-slot-wait`) still loses TTFT.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from cold_start import COLD_S, build
from recorded import FIXTURES

from grader.grading.grade import GradeRequest, grade
from grader.grading.rejudge import grade_of
from grader.records.book import RecordBook
from grader.rubric import load_rubric

RUBRIC = load_rubric()
#: Every criterion that reads a request's `start`: TTFT's two parts, the queue's p90 from the send, and the
#: throughput's wall time from the first send.
READS_START = (
    "loadgen.ttft",
    "loadgen.role-chunk",
    "loadgen.reasoning-content",
    "loadgen.sse-framing",
    "loadgen.queueing",
    "loadgen.throughput",
)


def _lead_of_first_request(book: RecordBook) -> float:
    """How long before the server saw it the cold client stamped its first request, in the baseline run."""
    import json

    record = book.records["loadgen/baseline"]
    (results,) = record["files"].values()
    first = min(json.loads(results)["requests"], key=lambda r: r["start"])
    arrival = next(r["arrival"] for r in record["ledger"] if r["id"] == first["id"])
    return float(arrival - first["start"])


def test_the_recorded_cold_client_keeps_every_criterion_that_reads_start() -> None:
    book = RecordBook.read(FIXTURES / "cold-start")
    assert _lead_of_first_request(book) > 0.1 + 0.02, "the emulated cold start is past the 100 ms a warm request has"
    grade = grade_of(book, RUBRIC)
    judged = {c.id: c for c in grade.criteria}
    assert set(READS_START) <= set(judged)
    assert {i: judged[i].output for i in READS_START if judged[i].status != "passed"} == {}


def test_the_recorded_clock_started_before_its_slot_still_fails_ttft() -> None:
    book = RecordBook.read(FIXTURES / "ttft-includes-slot-wait")
    judged = {c.id: c for c in grade_of(book, RUBRIC).criteria}
    assert (
        judged["loadgen.ttft"].status == "failed"
        and "before the server saw the request" in judged["loadgen.ttft"].output
    )


@pytest.mark.slow
@pytest.mark.rotating(27)
def test_a_cold_client_graded_live_keeps_every_criterion_that_reads_start(tmp_path: Path) -> None:
    folder = build(tmp_path / "cold")
    result = grade(GradeRequest(folder, tmp_path / "out", only=READS_START, echo=lambda _: None))
    assert COLD_S > 0.1
    assert {c.id: c.output[:300] for c in result.criteria if c.status != "passed"} == {}
