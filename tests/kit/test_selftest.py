"""`grader selftest` in `make test`: the reference and a sample of the chaff graded live, each chaff's live
grade held to what its recorded runs give.

Every chaff is judged from its recorded runs in the fast tier (tests/rooms/grading/test_recorded_runs.py): each
loses exactly its targets there, in milliseconds. What a recording cannot show is today's running code (the
fake server, the sandbox, what each section runs). So each run of the suite grades the reference and a few chaff
live, drawn by the suite's seed, named at the end of its output (`SUITE_SEED=N make test` draws the same again),
and holds every live grade to its recording judged today: the same status on every criterion both decided. The
same seed draws one of the correct submissions held to full marks (the independent one, the one built on common
frameworks, the cold-start client), graded live on what it implements. Over many runs every chaff and every one
of those is graded live; a difference says its recording is stale (`python tests/recorded.py NAME`).
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
from pathlib import Path

import pytest
from kit_paths import ROOT
from recorded import AS_GRADED, BUILT, FIXTURES, INDEPENDENT, source_of
from sampling import suite_seed

from grader.grading.rejudge import grade_of
from grader.kit.chaff import list_chaff
from grader.kit.selftest import draw_sample, selftest
from grader.records.book import RecordBook
from grader.rubric import load_rubric

#: Chaff graded live on each run of the suite, besides the reference and one correct submission: one, so that the
#: reference and it are graded at once beside the correct submission (about 5 minutes under the suite's load).
SAMPLE = 1
#: The correct submissions held to full marks, and the deliverables each implements (all, for one recorded whole).
DELIVERABLES = ("loadgen", "tests", "gateway", "manifests", "sizing", "memo")
CORRECT = {name: parts or DELIVERABLES
           for name, parts in {**{n: p for n, (_, p) in {**INDEPENDENT, **AS_GRADED}.items()}, **BUILT}.items()}


def _live_statuses(report_dir: Path) -> dict[str, str]:
    report = json.loads((report_dir / "report.json").read_text())
    return {c["id"]: c["status"] for c in report["extra_data"]["kit"]["criteria"]}


def _differences(name: str, live: dict[str, str]) -> dict[str, str]:
    """Criteria whose live status is not what the recording of `name` gives today (undecided ones left out)."""
    recorded = {c.id: c.status for c in grade_of(RecordBook.read(FIXTURES / name), load_rubric()).criteria}
    both = [i for i in live if i in recorded and "inconclusive" not in (live[i], recorded[i])]
    assert both, f"{name}: no criterion decided both live and in its recording"
    return {i: f"live {live[i]}, recorded {recorded[i]}" for i in both if live[i] != recorded[i]}


@pytest.mark.slow
def test_the_reference_and_a_sample_of_chaff_graded_live_agree_with_their_recordings(tmp_path, record_property):
    seed = suite_seed()
    names = [c.name for c in list_chaff(ROOT / "submissions" / "chaff")]
    drawn = draw_sample(names, SAMPLE, seed)
    correct = draw_sample(sorted(CORRECT), 1, seed)[0]
    part = draw_sample(sorted(CORRECT[correct]), 1, seed + 1)[0]  # one of its deliverables, drawn apart
    line = (f"selftest sample (SUITE_SEED={seed}): reference, {', '.join(drawn)}; "
            f"held to full marks: {correct} ({part})")
    record_property("selftest_sample", line)
    logs = [(tmp_path / name).open("w+") for name in ("selftest.out", "selftest.err")]  # never a full pipe
    grading = subprocess.Popen(
        [sys.executable, "-m", "grader.cli", "selftest", "--jobs", "2", "--sample", str(SAMPLE),
         "--sample-seed", str(seed), "--keep", str(tmp_path / "kept")],
        cwd=ROOT, stdout=logs[0], stderr=logs[1], text=True,
    )
    # the correct submission beside it, graded on one deliverable it implements as it was recorded (seed 0, variants)
    folder = source_of(correct, tmp_path / "built")
    only = ["--only", part]
    graded = subprocess.run(
        [sys.executable, "-m", "grader.cli", "grade", str(folder), "--out", str(tmp_path / "kept" / correct),
         "--seed", "0", *only], cwd=ROOT, capture_output=True, text=True, timeout=1200, check=False,
    )
    grading.wait(timeout=1200)
    out, err = ((f.seek(0), f.read(), f.close())[1] for f in logs)
    output = out[-6000:] + err[-3000:]
    assert grading.returncode == 0, f"{line}\n{output}"
    assert f"drawn with seed {seed}: {', '.join(drawn)}" in out
    assert sorted(re.findall(r"^(?:ok  |FAIL) (\S+)", out, flags=re.MULTILINE)) == sorted(["reference", *drawn]), output
    assert graded.returncode == 0, f"{line}\n{graded.stderr[-3000:]}"
    whole = json.loads((tmp_path / "kept" / correct / "report.json").read_text())
    lost = {c["id"]: c["output"][:300] for c in whole["extra_data"]["kit"]["criteria"]
            if c["status"] not in ("passed", "inconclusive") and c["weight"] > 0}  # weight 0: not in its brief
    assert not lost, f"{line}\n{correct} lost points: {lost}"
    # Each live grade against its recording, judged with today's rubric and criteria.
    differ = {}
    for name in ["reference", *drawn, correct]:
        if wrong := _differences(name, _live_statuses(tmp_path / "kept" / name)):
            differ[name] = wrong
    assert not differ, f"{line}\nrecorded runs no longer what today's code makes (record again): {differ}"


@pytest.mark.slow
def test_a_chaff_that_keeps_its_target_is_reported_wrong(tmp_path):
    root = tmp_path / "submissions"
    shutil.copytree(ROOT / "submissions" / "reference", root / "reference",
                    ignore=shutil.ignore_patterns("__pycache__", ".pytest_cache"))
    chaff = root / "chaff" / "harmless"
    chaff.mkdir(parents=True)
    (chaff / "chaff.yaml").write_text(
        "base: reference\n"
        "defect: a comment changed, nothing else\n"
        "targets: [loadgen.role-chunk]\n"
        "edits:\n"
        "  - file: submission.yaml\n"
        "    find: 'contract: 2'\n"
        "    replace: 'contract: 2  # unchanged'\n")
    lines: list[str] = []
    (finding,) = selftest(names=("harmless",), root=root, echo=lines.append, jobs=1)
    assert not finding.ok
    assert any("loadgen.role-chunk: should be lost, but passed" in line for line in finding.lines)


def test_a_sample_is_drawn_by_its_seed_alone():
    names = [c.name for c in list_chaff(ROOT / "submissions" / "chaff")]
    assert draw_sample(names, SAMPLE, 7) == draw_sample(list(reversed(names)), SAMPLE, 7)
    drawn = {tuple(draw_sample(names, SAMPLE, seed)) for seed in range(40)}
    assert len(drawn) > 25 and all(len(d) == SAMPLE for d in drawn)
    assert {draw_sample(sorted(CORRECT), 1, seed)[0] for seed in range(40)} == set(CORRECT)
    # and each of their deliverables: 200 seeds cover every (submission, deliverable)
    pairs = {(c, draw_sample(sorted(CORRECT[c]), 1, seed + 1)[0]) for seed in range(200)
             for c in [draw_sample(sorted(CORRECT), 1, seed)[0]]}
    assert pairs == {(c, p) for c, parts in CORRECT.items() for p in parts}
    # over many runs every chaff comes up: 1,000 seeds cover them all
    assert {n for seed in range(1000) for n in draw_sample(names, SAMPLE, seed)} == set(names)
