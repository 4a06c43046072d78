"""A grade run by hand (a live exercise whose commands the candidate starts): its sections run on the calling thread,
so Ctrl-C stops the wait for a person at once, and the grader's own error reaches the command; a grade in the
sandbox leaves the same error to a person and goes on."""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
from kit_paths import ROOT

from grader.grading.grade import GradeRequest, grade
from grader.sandbox.box_api import Box

REFERENCE = ROOT / "submissions" / "reference"


class _NoRoom(OSError):
    pass


def _broken_box(threads: list[threading.Thread]) -> contextlib.AbstractContextManager[Box]:
    @contextlib.contextmanager
    def opened() -> Iterator[Box]:
        threads.append(threading.current_thread())
        raise _NoRoom("no room for the run's folder")
        yield  # never reached: the box cannot open

    return opened()


def test_by_hand_the_sections_run_on_the_calling_thread_and_an_error_reaches_the_command(tmp_path: Path) -> None:
    threads: list[threading.Thread] = []
    request = GradeRequest(
        REFERENCE,
        tmp_path / "hand",
        only=("loadgen.role-chunk",),
        echo=lambda _: None,
        with_variants=False,
        open_box=lambda folder: _broken_box(threads),
        by_hand=True,
    )
    with pytest.raises(_NoRoom, match="no room"):
        grade(request)
    assert threads == [threading.main_thread()]


def test_in_the_sandbox_the_same_error_is_left_to_a_person_and_the_grade_goes_on(tmp_path: Path) -> None:
    threads: list[threading.Thread] = []
    request = GradeRequest(
        REFERENCE,
        tmp_path / "boxed",
        only=("loadgen.role-chunk", "manifests"),
        echo=lambda _: None,
        with_variants=False,
        open_box=lambda folder: _broken_box(threads),
    )
    result = grade(request)
    statuses = {c.id: c.status for c in result.criteria}
    assert statuses["loadgen.role-chunk"] == "inconclusive"
    assert "could not finish the loadgen section" in next(
        c.output for c in result.criteria if c.id == "loadgen.role-chunk"
    )
    assert all(s == "passed" for cid, s in statuses.items() if cid.startswith("manifests")), statuses
    assert threads and threads[0] is not threading.main_thread()
