"""`grader selftest` in `make test`: the reference and a sample of the chaff graded live, each chaff's live
grade held to what its recorded runs give.

Every chaff is judged from its recorded runs in the fast tier (tests/rooms/grading/test_recorded_runs.py): each
loses exactly its targets there, in milliseconds. What a recording cannot show is today's running code (the
fake server, the sandbox, what each section runs). So each run of the suite grades the reference and a few chaff
live, drawn by the suite's seed, named at the end of its output (`SUITE_SEED=N make test` draws the same again),
and holds every live grade to its recording judged today: the same status on every criterion both decided. Over
many runs every chaff is graded live; a difference says its recording is stale (`python tests/recorded.py NAME`).
The correct submissions held to full marks are graded beside it, in test_selftest_correct.py.
`grader selftest` with no --sample, which grades everything live, is `make selftest`.

The second test shows the selftest itself can fail: a chaff whose edit changes nothing is caught keeping the
criterion it names.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import IO

import pytest
from kit_paths import ROOT
from recorded import differences_from_recording, live_statuses
from sampling import suite_seed

from grader.kit.chaff import list_chaff
from grader.kit.selftest import draw_sample, selftest

#: Chaff graded live on each run of the suite, besides the reference: one, graded after it. One at a time: two
#: grades at once beside the suite's other grades left a machine too busy to time them, and both were run again.
SAMPLE = 1


def _read_and_close(log: IO[str]) -> str:
    """All a log file opened for writing and reading holds, then closed."""
    log.seek(0)
    text = log.read()
    log.close()
    return text


@pytest.mark.slow
def test_the_reference_and_a_sample_of_chaff_graded_live_agree_with_their_recordings(
    tmp_path: Path, record_property: Callable[[str, object], None]
) -> None:
    seed = suite_seed()
    names = [c.name for c in list_chaff(ROOT / "submissions" / "chaff")]
    drawn = draw_sample(names, SAMPLE, seed)
    line = f"selftest sample (SUITE_SEED={seed}): reference, {', '.join(drawn)}"
    record_property("selftest_sample", line)
    logs = [(tmp_path / name).open("w+") for name in ("selftest.out", "selftest.err")]  # never a full pipe
    grading = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "grader.cli",
            "selftest",
            "--jobs",
            "1",
            "--sample",
            str(SAMPLE),
            "--sample-seed",
            str(seed),
            "--keep",
            str(tmp_path / "kept"),
        ],
        cwd=ROOT,
        stdout=logs[0],
        stderr=logs[1],
        text=True,
    )
    grading.wait(timeout=1200)
    out, err = (_read_and_close(f) for f in logs)
    output = out[-6000:] + err[-3000:]
    assert grading.returncode == 0, f"{line}\n{output}"
    assert f"drawn with seed {seed}: {', '.join(drawn)}" in out
    assert sorted(re.findall(r"^(?:ok  |FAIL) (\S+)", out, flags=re.MULTILINE)) == sorted(["reference", *drawn]), output
    # Each live grade against its recording, judged with today's rubric and criteria.
    differ = {}
    for name in ["reference", *drawn]:
        if wrong := differences_from_recording(name, live_statuses(tmp_path / "kept" / name)):
            differ[name] = wrong
    assert not differ, f"{line}\nrecorded runs no longer what today's code makes (record again): {differ}"


@pytest.mark.slow
def test_a_chaff_that_keeps_its_target_is_reported_wrong(tmp_path: Path) -> None:
    root = tmp_path / "submissions"
    shutil.copytree(
        ROOT / "submissions" / "reference",
        root / "reference",
        ignore=shutil.ignore_patterns("__pycache__", ".pytest_cache"),
    )
    chaff = root / "chaff" / "harmless"
    chaff.mkdir(parents=True)
    (chaff / "chaff.yaml").write_text(
        "base: reference\n"
        "defect: a comment changed, nothing else\n"
        "targets: [loadgen.role-chunk]\n"
        "edits:\n"
        "  - file: submission.yaml\n"
        "    find: 'contract: 4'\n"
        "    replace: 'contract: 4  # unchanged'\n"
    )
    lines: list[str] = []
    kept = tmp_path / "kept"
    (finding,) = selftest(names=("harmless",), root=root, echo=lines.append, jobs=1, keep=kept)
    assert not finding.ok
    assert any("loadgen.role-chunk: should be lost, but passed" in line for line in finding.lines)
    # Wrong once, so graded again: the first grading's records are kept beside the second's, not overwritten.
    first, second = (json.loads((kept / n / "report.json").read_text()) for n in ("harmless-first-grading", "harmless"))
    assert first["tests"] and second["tests"]
    assert (kept / "harmless-first-grading" / "runs").is_dir() and (kept / "harmless" / "runs").is_dir()


def test_a_sample_is_drawn_by_its_seed_alone() -> None:
    names = [c.name for c in list_chaff(ROOT / "submissions" / "chaff")]
    assert draw_sample(names, SAMPLE, 7) == draw_sample(list(reversed(names)), SAMPLE, 7)
    drawn = {tuple(draw_sample(names, SAMPLE, seed)) for seed in range(40)}
    assert len(drawn) > 25 and all(len(d) == SAMPLE for d in drawn)
    # over many runs every chaff comes up: 1,000 seeds cover them all
    assert {n for seed in range(1000) for n in draw_sample(names, SAMPLE, seed)} == set(names)
