"""A busy machine costs a candidate a wait, never points: `grader check` warns before it starts on a busy machine,
judges an inconclusive criterion again once the machine is quiet, and shows what is still undecided apart from
its total, with why."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest
from kit_paths import ROOT

from grader.candidate import check
from grader.candidate.machine import Load, load_now, wait_for_quiet
from grader.grading.grade import GradeRequest, grade
from grader.outcome import Grade

REFERENCE = ROOT / "submissions" / "reference"


def test_busy_and_quiet_read_the_average_and_the_tasks_runnable_now() -> None:
    assert Load(4.2, 2, 1).busy and not Load(4.2, 2, 1).quiet  # the minute's average says busy
    assert Load(0.5, 2, 3).busy and not Load(0.5, 2, 3).quiet  # a burst the average has not caught up with
    assert not Load(1.5, 2, 1).busy and Load(1.5, 2, 1).quiet
    assert Load(1.5, 2, None).quiet and not Load(2.5, 2, None).quiet  # no /proc: the average alone
    assert str(Load(4.2, 2, 3)) == "load 4.2 on 2 cores, 3 runnable now"
    now = load_now()
    assert now.cores >= 1 and now.average >= 0


class _Clock:
    def __init__(self) -> None:
        self.t = 0.0

    def __call__(self) -> float:
        return self.t

    def sleep(self, s: float) -> None:
        self.t += s


def test_waiting_for_quiet_needs_quiet_seconds_in_a_row_and_gives_up_at_its_limit() -> None:
    clock = _Clock()
    busy, quiet = Load(3.0, 2, 3), Load(1.0, 2, 0)
    # busy for 5 s, then quiet: done once 3 quiet seconds have passed in a row
    seen = iter([busy] * 5 + [quiet, busy] + [quiet] * 10)
    ok, last = wait_for_quiet(60, settle_s=3, measure=lambda: next(seen), sleep=clock.sleep, clock=clock)
    assert ok and last.quiet and clock.t == 10  # the one busy second between restarted the count
    clock = _Clock()
    ok, last = wait_for_quiet(20, settle_s=3, measure=lambda: busy, sleep=clock.sleep, clock=clock)
    assert not ok and last.busy and clock.t == 20


def test_an_inconclusive_criterion_is_judged_again_and_its_new_verdict_replaces_it(tmp_path: Path) -> None:
    """The merge of a first grade and the grade that judges again, on a criterion that needs no sandbox."""
    run = GradeRequest(REFERENCE, tmp_path / "out", only=("manifests",), echo=lambda _: None, public_only=True)
    first = grade(run)
    gpu = next(c for c in first.criteria if c.id == "manifests.gpu-request")
    unsure = dataclasses.replace(gpu, status="inconclusive", score=0.0, output="INCONCLUSIVE: a busy machine")
    first = dataclasses.replace(first, criteria=[unsure if c.id == gpu.id else c for c in first.criteria])
    lines: list[str] = []
    merged = check._again_when_quiet(first, dataclasses.replace(run, echo=lines.append), wait_s=0)
    assert [c.status for c in merged.criteria] == ["passed"] * len(first.criteria)
    assert merged.score == merged.max_score > first.score
    assert any("1 criteria inconclusive (manifests.gpu-request): judged again" in line for line in lines)
    assert (tmp_path / "out" / "judged-again" / "report.json").is_file()
    assert '"status": "inconclusive"' not in (tmp_path / "out" / "report.json").read_text()


def test_the_check_warns_on_a_busy_machine_and_keeps_undecided_criteria_out_of_its_total(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    busy = Load(9.0, 2, 6)
    monkeypatch.setattr(check, "load_now", lambda: busy)

    def never_decided(result: Grade, run: GradeRequest, *, wait_s: float = check.QUIET_WAIT_S) -> Grade:
        # as a machine that stays too busy leaves it
        gpu = next(c for c in result.criteria if c.id == "manifests.gpu-request")
        unsure = dataclasses.replace(
            gpu, status="inconclusive", score=0.0, output="INCONCLUSIVE: the machine was too busy both times\nmore"
        )
        return dataclasses.replace(result, criteria=[unsure if c.id == gpu.id else c for c in result.criteria])

    monkeypatch.setattr(check, "_again_when_quiet", never_decided)
    lines: list[str] = []
    outcome = check.run_check(REFERENCE, tmp_path / "out", only=("manifests",), echo=lines.append)
    text = "\n".join(lines)
    assert text.startswith("WARNING: this machine is busy (load 9.0 on 2 cores, 6 runnable now)")
    assert outcome.undecided == {"manifests.gpu-request": "INCONCLUSIVE: the machine was too busy both times"}
    assert outcome.failed_criteria == [] and outcome.max_score == outcome.score > 0
    assert "Not in that total: 1 criteria (1 points) still undecided" in text
    assert "  manifests.gpu-request: INCONCLUSIVE: the machine was too busy both times" in text
