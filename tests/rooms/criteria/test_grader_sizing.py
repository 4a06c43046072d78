"""Sizing criteria: the contract's arithmetic against the seed's worked figures, and the criteria judged on
the reference's and a chaff's recorded runs (tests/fixtures/runs), and on a crash in the real sandbox."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from grader_cli import run_grader
from kit_paths import ROOT
from recorded import FIXTURES

from grader.criteria.sizing_truth import Conventions, expected
from grader.grading.rejudge import grade_of
from grader.outcome import CriterionResult
from grader.records.book import RecordBook
from grader.rubric import load_rubric

_PLAN = load_rubric().sizing.with_hidden()
SETS, BASE, PERTURB = _PLAN.sets, _PLAN.perturb_base, _PLAN.perturb


def test_the_seed_set_gives_the_seed_figures() -> None:
    """Each figure worked by hand from the seed set's flags, in the words of TASK.md's sizing section
    (flags, `siz-output`), and rounded as a person would write it in the memo."""
    seed = SETS["seed"]
    r = expected(seed)
    throughput, month_hours = seed["throughput"], 720  # --hours-per-month defaults to 720
    # cost per million output tokens: the GPU hour's price over the tokens a billed hour makes when busy U of it
    costs = {(row["gpu_hour_usd"], row["utilisation"]): row["usd"] for row in r["cost_per_million_output_tokens"]}
    for price in seed["gpu-hour-usd"]:
        for busy in seed["utilisation"]:
            assert costs[price, busy] == pytest.approx(price / (throughput * 3600 * busy) * 1e6)
    assert round(costs[2.99, 1.0], 2) == 1.40 and round(costs[2.99, 0.25], 2) == 5.58
    # the load: chats x turns x output tokens over the active hours, at the peak factor
    peak = (
        seed["chats-per-day"]
        * seed["turns-per-chat"]
        * seed["output-tokens-per-turn"]
        / (seed["active-hours"] * 3600)
        * seed["peak-factor"]
    )
    assert peak == pytest.approx(166.67, abs=0.01) and peak < throughput  # one replica carries the peak...
    assert r["replicas_for_load"] == 1 and r["replicas"] == 2  # ...and --min-replicas 2 (default) is the floor
    # the month: price x replicas x hours, for one replica and for the replicas
    monthly = {(row["gpu_hour_usd"], row["replicas"]): row["usd"] for row in r["monthly_cost"]}
    assert round(monthly[2.99, 1]) == round(2.99 * month_hours) == 2153
    assert round(monthly[6.88, 1]) == round(6.88 * month_hours) == 4954
    # a chat: the month's bill for the replicas over the month's chats (H / 24 days of chats)
    chats = seed["chats-per-day"] * month_hours / 24
    assert r["chats_per_month"] == chats == 60_000
    assert r["cost_per_chat_usd"][0]["usd"] == pytest.approx(2.99 * 2 * month_hours / chats)
    assert round(r["cost_per_chat_usd"][0]["usd"], 3) == 0.072
    # the batch: its output tokens at the replica's throughput
    assert round(r["batch_hours"] * 60) == round(seed["batch-output-tokens"] / throughput / 60) == 28
    # the KV cache: GPU memory x utilisation, less overhead and weights, in bytes (GB = 10^9) per token's bytes
    free_bytes = (seed["gpu-memory-gb"] * 0.92 - seed["overhead-gb"] - seed["weights-gb"]) * 10**9
    assert r["kv_cache"]["tokens"] == int(free_bytes / seed["kv-bytes-per-token"]) == 634_765
    # the API like for like: a chat's input and output at list prices, over the chat's output tokens
    turn_usd = (
        seed["input-tokens-per-turn"] * seed["api-input-usd-per-million"]
        + seed["output-tokens-per-turn"] * seed["api-output-usd-per-million"]
    ) / 1e6
    assert (
        r["api"]["usd_per_million_output_tokens_with_input"]
        == pytest.approx(turn_usd / seed["output-tokens-per-turn"] * 1e6)
        and round(turn_usd / 300 * 1e6) == 40
    )


def test_unseen_sets_put_the_load_above_the_floor_and_vary_every_input() -> None:
    hidden = {name: flags for name, flags in SETS.items() if name != "seed"}
    assert len(hidden) >= 4
    above = [n for n, f in hidden.items() if expected(f)["replicas_for_load"] > f.get("min-replicas", 2)]
    assert len(above) >= 2
    for flag in SETS["seed"]:
        assert any(f.get(flag) != SETS["seed"][flag] for f in hidden.values()), flag
    assert set(SETS[BASE]) <= set(PERTURB)  # every input of the base can be moved alone


def test_a_two_gpu_replica_and_stated_conventions() -> None:
    flags = {
        **SETS["seed"],
        "gpus-per-replica": 2,
        "gpu-memory-gb": 141,
        "gpu-memory-utilization": 0.9,
        "weights-gb": 70,
        "overhead-gb": 6,
        "kv-bytes-per-token": 163840,
    }
    assert expected(flags)["kv_cache"]["tokens"] == 1_048_583
    month = expected(SETS["seed"], Conventions(hours_per_month=730))["monthly_cost"][0]["usd"]
    assert month == pytest.approx(2.99 * 730)
    gib = expected(SETS["seed"], Conventions(gib=True))["kv_cache"]["tokens"]
    assert gib == int(41.6 * 2**30 / 65536)


def _grade(folder: Path, out: Path) -> dict[str, dict[str, Any]]:
    done = run_grader("grade", "--seed", "0", folder, "--out", out, "--only", "sizing", timeout=300)
    assert done.returncode == 0, done.stderr
    report = json.loads((out / "report.json").read_text())
    return {t["name"].split(":")[0]: t for t in report["tests"]}


def _judged(name: str) -> dict[str, CriterionResult]:
    grade = grade_of(RecordBook.read(FIXTURES / name), load_rubric())
    return {c.id: c for c in grade.criteria if c.deliverable == "sizing"}


def test_reference_full_marks_and_a_constant_price_named() -> None:
    reference = _judged("reference")
    sizing = {c.id for c in load_rubric().criteria if c.deliverable == "sizing"}
    assert set(reference) == sizing and all(c.status == "passed" for c in reference.values())
    chaff = _judged("sizing-gpu-price-constant")
    cost = chaff["sizing.cost-per-million"]
    assert cost.score == 0 and "does not move when --gpu-hour-usd moves" in cost.output
    assert chaff["sizing.kv-cache"].status == "passed"


def test_a_crash_fails_with_its_stderr_quoted(tmp_path: Path) -> None:
    folder = tmp_path / "sub"
    (folder / "sizing").mkdir(parents=True)
    (folder / "sizing" / "sizing.py").write_text("import sys\nsys.exit('no sizing here: boom')\n")
    (folder / "submission.yaml").write_text("contract: 1\nsizing:\n  command: [python, sizing/sizing.py]\n")
    tests = _grade(folder, tmp_path / "out")
    assert tests["sizing.runs"]["score"] == 0 and "boom" in tests["sizing.runs"]["output"]


def _with_set(book: RecordBook, name: str, flags: dict[str, object], output: dict[str, object]) -> RecordBook:
    """The reference's records with one more sizing input set, as the grade would have recorded it."""
    key, record = next((k, r) for k, r in book.records.items() if r["section"] == "sizing")
    record = json.loads(json.dumps(record))
    record["sets"].append(
        {
            "name": name,
            "flags": flags,
            "output": output,
            "exit_code": 0,
            "problem": None,
            "stderr_tail": "",
            "wall_s": 0.1,
        }
    )
    book.records[key] = record
    return book


def test_monthly_cost_at_one_replica_is_one_row_given_once_or_twice() -> None:
    """TASK.md: with `replicas` 1 the "one replica" and "the replicas" rows of `monthly_cost` are the same row, given
    once or twice. The reference's own command on the seed set with --min-replicas 1 (one replica carries its
    peak), its rows as printed, once and twice; a wrong figure in that row still fails, so the set is judged."""
    flags = {**SETS["seed"], "min-replicas": 1}
    argv = [f"--{k}={v}" for k, value in flags.items() for v in (value if isinstance(value, list) else [value])]
    done = subprocess.run(
        [sys.executable, "sizing/sizing.py", *argv],
        cwd=ROOT / "submissions" / "reference",
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    output = json.loads(done.stdout)
    assert output["replicas"] == 1
    one = [row for row in output["monthly_cost"] if row["replicas"] == 1]
    assert len({row["gpu_hour_usd"] for row in one}) == len(SETS["seed"]["gpu-hour-usd"])
    once = {**output, "monthly_cost": [dict(row) for row in {r["gpu_hour_usd"]: r for r in one}.values()]}
    twice = {**output, "monthly_cost": [dict(row) for row in once["monthly_cost"] for _ in range(2)]}
    wrong = {**output, "monthly_cost": [{**row, "usd": row["usd"] * 2} for row in once["monthly_cost"]]}
    rubric = load_rubric()
    for rows, status in ((once, "passed"), (twice, "passed"), (wrong, "failed")):
        book = _with_set(RecordBook.read(FIXTURES / "reference"), "one-replica", flags, rows)
        monthly = {c.id: c for c in grade_of(book, rubric).criteria}["sizing.monthly"]
        assert monthly.status == status, (len(rows["monthly_cost"]), monthly.output)
