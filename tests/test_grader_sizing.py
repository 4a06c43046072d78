"""Sizing criteria: the contract's arithmetic against the seed's worked figures, and the criteria judged on
the reference's and a chaff's recorded runs (tests/fixtures/runs), and on a crash in the real sandbox."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from recorded import FIXTURES

from grader.criteria.sizing_truth import Conventions, expected
from grader.records.book import RecordBook
from grader.grading.rejudge import grade_of
from grader.rubric import load_rubric

ROOT = Path(__file__).resolve().parents[1]
_PLAN = load_rubric().sizing.with_hidden()
SETS, BASE, PERTURB = _PLAN.sets, _PLAN.perturb_base, _PLAN.perturb


def test_the_seed_set_gives_the_seed_figures() -> None:
    r = expected(SETS["seed"])
    costs = {(row["gpu_hour_usd"], row["utilisation"]): row["usd"] for row in r["cost_per_million_output_tokens"]}
    assert round(costs[2.99, 1.0], 2) == 1.40 and round(costs[2.99, 0.25], 2) == 5.58  # answer 7
    monthly = {(row["gpu_hour_usd"], row["replicas"]): row["usd"] for row in r["monthly_cost"]}
    assert round(monthly[2.99, 1]) == 2153 and round(monthly[6.88, 1]) == 4954  # the outline's month
    assert r["replicas_for_load"] == 1 and r["replicas"] == 2  # the floor of two hides the load here
    assert round(r["cost_per_chat_usd"][0]["usd"], 3) == 0.072 and r["chats_per_month"] == 60_000
    assert round(r["batch_hours"] * 60) == 28
    assert r["kv_cache"]["tokens"] == 634_765 and r["api"]["usd_per_million_output_tokens_with_input"] == 40


def test_unseen_sets_put_the_load_above_the_floor_and_vary_every_input() -> None:
    hidden = {name: flags for name, flags in SETS.items() if name != "seed"}
    assert len(hidden) >= 4
    above = [n for n, f in hidden.items() if expected(f)["replicas_for_load"] > f.get("min-replicas", 2)]
    assert len(above) >= 2
    for flag in SETS["seed"]:
        assert any(f.get(flag) != SETS["seed"][flag] for f in hidden.values()), flag
    assert set(SETS[BASE]) <= set(PERTURB)  # every input of the base can be moved alone


def test_a_two_gpu_replica_and_stated_conventions() -> None:
    flags = {**SETS["seed"], "gpus-per-replica": 2, "gpu-memory-gb": 141, "gpu-memory-utilization": 0.9,
             "weights-gb": 70, "overhead-gb": 6, "kv-bytes-per-token": 163840}
    assert expected(flags)["kv_cache"]["tokens"] == 1_048_583
    month = expected(SETS["seed"], Conventions(hours_per_month=730))["monthly_cost"][0]["usd"]
    assert month == pytest.approx(2.99 * 730)
    gib = expected(SETS["seed"], Conventions(gib=True))["kv_cache"]["tokens"]
    assert gib == int(41.6 * 2**30 / 65536)


def _grade(folder: Path, out: Path) -> dict[str, dict[str, object]]:
    done = subprocess.run([sys.executable, "-m", "grader.cli", "grade", str(folder), "--out", str(out),
                           "--only", "sizing"], cwd=ROOT, capture_output=True, text=True, timeout=300, check=False)
    assert done.returncode == 0, done.stderr
    report = json.loads((out / "report.json").read_text())
    return {t["name"].split(":")[0]: t for t in report["tests"]}


def _judged(name: str) -> dict[str, object]:
    grade = grade_of(RecordBook.read(FIXTURES / name), load_rubric())
    return {c.id: c for c in grade.criteria if c.deliverable == "sizing"}


def test_reference_full_marks_and_a_constant_price_named() -> None:
    reference = _judged("reference")
    assert len(reference) == 7 and all(c.status == "passed" for c in reference.values())  # type: ignore[attr-defined]
    chaff = _judged("sizing-gpu-price-constant")
    cost = chaff["sizing.cost-per-million"]
    assert cost.score == 0 and "does not move when --gpu-hour-usd moves" in cost.output  # type: ignore[attr-defined]
    assert chaff["sizing.kv-cache"].status == "passed"  # type: ignore[attr-defined]


def test_a_crash_fails_with_its_stderr_quoted(tmp_path: Path) -> None:
    folder = tmp_path / "sub"
    (folder / "sizing").mkdir(parents=True)
    (folder / "sizing" / "sizing.py").write_text("import sys\nsys.exit('no sizing here: boom')\n")
    (folder / "submission.yaml").write_text("contract: 1\nsizing:\n  command: [python, sizing/sizing.py]\n")
    tests = _grade(folder, tmp_path / "out")
    assert tests["sizing.runs"]["score"] == 0 and "boom" in tests["sizing.runs"]["output"]
