"""The live exercises (`grader live`, grader/unseen/live.yaml): each is made right, the reference passes it, the
live chaff made for it (submissions/live-chaff/NAME, a base and edits as every chaff is) fails exactly its
targets, and its record is judged again by `grader rejudge` to the same verdict.

The pool's checks run in milliseconds; each exercise's real runs, in the sandbox on loopback, are in the slow
tier (a few seconds each, the reference's and the chaff's at once).
"""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest
import yaml
from click.testing import CliRunner
from kit_paths import ROOT

from grader.cli import main
from grader.criteria.catalog import registered
from grader.criteria.live import expected
from grader.kit.chaff import list_chaff, materialize
from grader.live.session import LOG, run_live
from grader.rubric import load_rubric
from grader.rubric.live_pool import POOL_FILE, LivePool, LivePoolError, exercise_rubric, kit_rubric_data, load_pool

REFERENCE = ROOT / "submissions" / "reference"
LIVE_CHAFF = {c.name: c for c in list_chaff(ROOT / "submissions" / "live-chaff")}
KIT = kit_rubric_data()


def _kit_pool() -> LivePool:
    pool = load_pool(KIT)
    assert pool is not None  # the kit ships its pool (grader/unseen/live.yaml)
    return pool


POOL = _kit_pool()
NAMES = sorted(POOL.exercises)


def test_the_pool_is_unseen_material_with_a_time_box_and_a_chaff_for_every_exercise() -> None:
    assert POOL_FILE.parent.name == "unseen"  # the bundle leaves that folder out (tests/kit/test_bundle.py)
    assert len(NAMES) >= 6
    assert {e.deliverable for e in POOL.exercises.values()} == {"loadgen", "gateway"}
    for exercise in POOL.exercises.values():
        assert 0 < exercise.time_box_min <= 10, exercise.name
        assert exercise.tell and exercise.watch_for
    assert sorted(LIVE_CHAFF) == NAMES, "every live exercise has the live chaff of its name, and only those"
    for name, chaff in LIVE_CHAFF.items():
        assert set(chaff.targets) <= set(POOL.exercise(name).criteria), name


def test_the_grade_never_judges_a_live_check() -> None:
    rubric = load_rubric()
    assert not set(POOL.criteria) & {c.id for c in rubric.criteria}
    assert all(cid in registered() for cid in POOL.criteria)


@pytest.mark.parametrize("name", NAMES)
def test_each_exercise_is_a_rubric_whose_every_case_can_be_judged(name: str, tmp_path: Path) -> None:
    path = tmp_path / "rubric.yaml"
    path.write_text(json.dumps(exercise_rubric(POOL, name, KIT)))
    rubric = load_rubric(path, checks=registered())
    exercise = POOL.exercise(name)
    assert [c.id for c in rubric.criteria] == list(exercise.criteria)
    if exercise.deliverable == "gateway":
        assert [c.name for c in rubric.gateway.cases] == ["startup", *(c.name for c in exercise.cases)]
        margin = next((c.tol("margin_s") for c in rubric.criteria if c.id == "live.route"), None)
        if margin is not None:
            for case in rubric.gateway.cases:
                if case.kind == "one":
                    assert expected(case, rubric.gateway, margin).route != "undecided", case.name
    else:
        assert list(rubric.scenarios) == [name]
        assert all(c.scenarios == (name,) for c in rubric.criteria)


def test_a_broken_pool_is_named_by_file_and_field(tmp_path: Path) -> None:
    data = yaml.safe_load(POOL_FILE.read_text())
    data["exercises"]["shorter-context"]["criteria"].append({"id": "gateway.no-such-rule"})
    data["exercises"]["sse-framing-shift"]["gateway"]["config"] = {"local.no_such_timeout": 1}
    path = tmp_path / "live.yaml"
    path.write_text(yaml.safe_dump(data))
    with pytest.raises(LivePoolError) as caught:
        load_pool(KIT, path)
    lines = str(caught.value).splitlines()
    assert all(line.startswith(f"{path}: exercises.") for line in lines), lines
    assert any("shorter-context.criteria[3].id: 'gateway.no-such-rule' is neither" in line for line in lines)
    assert any("sse-framing-shift.gateway.config.local.no_such_timeout: no such setting" in line for line in lines)
    data["exercises"]["brownout"]["time_box_min"] = 15  # a time box is at most ten minutes
    path.write_text(yaml.safe_dump(data))
    with pytest.raises(LivePoolError) as caught:
        load_pool(KIT, path)
    assert "time_box_min" in str(caught.value) and "brownout" in str(caught.value)


def test_live_list_names_every_exercise_and_its_time_box() -> None:
    result = CliRunner().invoke(main, ["live", "--list"])
    assert result.exit_code == 0, result.output
    for exercise in POOL.exercises.values():
        line = next(line for line in result.output.splitlines() if line.startswith(exercise.name + " "))
        assert f"{exercise.time_box_min:g} min" in line and exercise.deliverable in line


def test_live_refuses_an_unknown_exercise_in_one_line(tmp_path: Path) -> None:
    result = CliRunner().invoke(main, ["live", str(REFERENCE), "no-such-exercise", "--out", str(tmp_path)])
    assert result.exit_code == 2
    assert "no-such-exercise: no such live exercise (known: " in result.output
    assert "Traceback" not in result.output


def _statuses(folder: Path) -> dict[str, str]:
    report = json.loads((folder / "report.json").read_text())
    return {t["extra_data"]["id"]: t["extra_data"]["status"] for t in report["tests"]}


def _verdicts(criteria: list[Any], wanted: dict[str, str] | None = None) -> dict[str, str]:
    """Each criterion's status, where a verdict a machine too busy to keep time withheld (inconclusive, with the
    busy reason) stands for the one wanted: the suite keeps both cores busy, and a busy machine never turns
    into a wrong verdict (tests/rooms/grading/test_loaded_machine.py holds that). For a chaff (`wanted` given)
    any withheld verdict stands for the wanted one: beside the suite's load a timed check of a gateway that falls
    back late can be borderline twice, which leaves it to a person and is never a wrong verdict."""
    out = {}
    for c in criteria:
        withheld = c.status == "inconclusive" and (bool(c.busy) or "too busy" in c.output or wanted is not None)
        out[c.id] = (wanted or {}).get(c.id, "passed") if withheld else c.status
    return out


@pytest.mark.slow
@pytest.mark.sampled(2)  # a sample each run (tests/sampling.py)
@pytest.mark.parametrize("name", NAMES)
@pytest.mark.rotating(42)
def test_the_reference_passes_each_exercise_and_its_chaff_fails_it_and_rejudges_the_same(
    name: str, tmp_path: Path
) -> None:
    chaff = LIVE_CHAFF[name]
    built = materialize(chaff.path, tmp_path / "chaff")
    lines: dict[str, list[str]] = {"reference": [], "chaff": []}
    with ThreadPoolExecutor(max_workers=2) as pool:
        runs = {
            who: pool.submit(run_live, sub, name, tmp_path / who, echo=lines[who].append)
            for who, sub in (("reference", REFERENCE), ("chaff", built))
        }
        reference, defective = runs["reference"].result(), runs["chaff"].result()
    exercise = POOL.exercise(name)
    assert _verdicts(reference.made.grade.criteria) == dict.fromkeys(exercise.criteria, "passed"), "\n".join(
        lines["reference"]
    )
    wanted = {cid: ("failed" if cid in chaff.targets else "passed") for cid in exercise.criteria}
    assert _verdicts(defective.made.grade.criteria, wanted) == wanted, "\n".join(lines["chaff"])
    # what the interviewer reads: what to tell, the verdict, what made it fail beside the ledgers
    said = "\n".join(lines["chaff"])
    withheld = all(c.status == "inconclusive" for c in defective.made.grade.criteria if c.id in chaff.targets)
    assert exercise.tell in said and ("FAILED " in said or withheld) and exercise.watch_for in said
    assert any(line.startswith("to reproduce by hand:") for line in lines["chaff"])
    # the record, judged again by `grader rejudge`, with the exercise's rubric kept beside it
    folder = tmp_path / "chaff" / name / "run-1"
    recorded = _statuses(folder)
    result = CliRunner().invoke(main, ["rejudge", str(folder), "--out", str(tmp_path / "rejudged")])
    assert result.exit_code == 0, result.output
    assert _statuses(tmp_path / "rejudged") == recorded
    assert {cid: s for cid, s in recorded.items() if s != "inconclusive"} == {
        cid: s for cid, s in wanted.items() if recorded.get(cid) != "inconclusive"
    }
    log = json.loads((tmp_path / "chaff" / name / LOG).read_text())
    assert [r["run"] for r in log["runs"]] == [1] and log["runs"][0]["statuses"] == recorded


def _play_the_candidate(lines: list[str], submission: Path, done: threading.Event) -> threading.Thread:
    """A candidate at their own terminal: waits for the printed command, runs it from their folder (by hand)."""

    def play() -> None:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and not done.is_set():
            found = [line for line in lines if line.startswith("  cd ")]
            if found:
                command = found[0].strip()
                env = {**os.environ, "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}"}
                process = subprocess.Popen(  # with the kit's environment active, as the candidate's is
                    ["bash", "-c", command], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env
                )
                done.wait(60)
                process.terminate()
                process.wait(10)
                return
            time.sleep(0.05)

    thread = threading.Thread(target=play, daemon=True)
    thread.start()
    return thread


@pytest.mark.slow
@pytest.mark.parametrize("name", ["reasoning-stream-error", "gateway-429-storm"])
@pytest.mark.rotating(14)
def test_an_exercise_run_by_hand_is_recorded_and_judged_as_in_the_sandbox(name: str, tmp_path: Path) -> None:
    lines: list[str] = []
    done = threading.Event()
    candidate = _play_the_candidate(lines, REFERENCE, done)
    try:
        outcome = run_live(REFERENCE, name, tmp_path, by_hand=True, echo=lines.append, wait_s=60)
    finally:
        done.set()
        candidate.join(30)
    said = "\n".join(lines)
    assert outcome.passed, said
    assert re.search(r"http://127\.0\.0\.1:\d+/v1", said), "the fake servers' URLs on this machine's loopback"
    report = json.loads((outcome.folder / "report.json").read_text())
    assert report["extra_data"]["kit"]["sandbox_note"].startswith("UNSANDBOXED: run by hand")
    result = CliRunner().invoke(main, ["rejudge", str(outcome.folder), "--out", str(tmp_path / "again")])
    assert result.exit_code == 0, result.output
    assert set(_statuses(tmp_path / "again").values()) == {"passed"}
    assert shlex.split(next(line for line in lines if line.startswith("  cd ")).strip())[0] == "cd"


@pytest.mark.slow
@pytest.mark.rotating(7)
def test_the_candidate_fixes_their_code_and_runs_again_and_each_run_is_recorded(tmp_path: Path) -> None:
    name = "reasoning-stream-error"
    folder = materialize(LIVE_CHAFF[name].path, tmp_path / "candidate")
    out = tmp_path / "live"
    first = CliRunner().invoke(main, ["live", str(folder), name, "--out", str(out)])
    assert first.exit_code == 1, first.output
    assert POOL.exercise(name).tell in first.output and "FAILED" in first.output
    shutil.rmtree(folder)  # the fix: the candidate's folder, as the reference writes it
    shutil.copytree(REFERENCE, folder, ignore=shutil.ignore_patterns("__pycache__"))
    second = CliRunner().invoke(main, ["live", str(folder), name, "--out", str(out)])
    assert second.exit_code == 0, second.output
    assert "run 2, " in second.output and "into the time box" in second.output
    log = json.loads((out / name / LOG).read_text())
    assert [(r["run"], r["folder"], set(r["statuses"].values())) for r in log["runs"]] == [
        (1, "run-1", {"failed", "passed"}),
        (2, "run-2", {"passed"}),
    ]
    assert log["time_box_min"] == POOL.exercise(name).time_box_min
    assert _statuses(out / name / "run-1")["loadgen.stream-error"] == "failed"
    assert set(_statuses(out / name / "run-2").values()) == {"passed"}
