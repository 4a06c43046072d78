"""The correct submissions held to full marks, one graded live on each run of the suite.

Beside the selftest's reference and chaff (test_selftest.py), the suite's seed draws one of the correct
submissions (the independent one, the contract-1 reference, the one built on common frameworks, the cold-start
client) and one deliverable it implements, grades it live as it was recorded (seed 0, unseen variants included),
and holds it to full marks and to its recording judged today. It takes its turn with the heaviest tests
(tests/sampling.py); over many runs every (submission, deliverable) pair is graded live. A file of its own, so
that it runs on a worker of its own beside the selftest.
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest
from kit_paths import ROOT
from recorded import CORRECT, differences_from_recording, live_statuses, source_of
from sampling import suite_seed

from grader.kit.selftest import draw_sample


def drawn_correct(seed: int) -> tuple[str, str]:
    """The correct submission and the one deliverable of it that `seed` draws."""
    correct = draw_sample(sorted(CORRECT), 1, seed)[0]
    return correct, draw_sample(sorted(CORRECT[correct]), 1, seed + 1)[0]  # its deliverable, drawn apart


@pytest.mark.slow
@pytest.mark.rotating(120)
def test_a_correct_submission_graded_live_on_a_deliverable_scores_full_marks_as_recorded(
    tmp_path: Path, record_property: Callable[[str, object], None]
) -> None:
    seed = suite_seed()
    correct, part = drawn_correct(seed)
    line = f"held to full marks (SUITE_SEED={seed}): {correct} ({part})"
    record_property("selftest_correct", line)
    folder = source_of(correct, tmp_path / "built")
    out = tmp_path / "kept" / correct
    graded = subprocess.run(
        [sys.executable, "-m", "grader.cli", "grade", str(folder), "--out", str(out), "--seed", "0", "--only", part],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=1200,
        check=False,
    )
    assert graded.returncode == 0, f"{line}\n{graded.stderr[-3000:]}"
    report = json.loads((out / "report.json").read_text())
    lost = {
        c["id"]: c["output"][:300]
        for c in report["extra_data"]["kit"]["criteria"]
        if c["status"] not in ("passed", "inconclusive") and c["weight"] > 0
    }  # weight 0: not in its brief
    assert not lost, f"{line}\n{correct} lost points: {lost}"
    differ = differences_from_recording(correct, live_statuses(out))
    assert not differ, f"{line}\nrecorded runs no longer what today's code makes (record again): {differ}"


def test_every_correct_submission_and_each_of_its_deliverables_is_drawn_over_many_seeds() -> None:
    assert {draw_sample(sorted(CORRECT), 1, seed)[0] for seed in range(40)} == set(CORRECT)
    assert {drawn_correct(seed) for seed in range(200)} == {(c, p) for c, parts in CORRECT.items() for p in parts}
