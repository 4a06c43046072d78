"""Time to a verdict: a submission that hangs is stopped at limits its scenarios' own durations give, each
hung criterion says what hung; one that is correct but twice as slow loses nothing.

The slow and the hung submissions wrap the reference's own commands (tests/slow_and_hung.py).
"""

from __future__ import annotations

import time
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from slow_and_hung import hung, slow

from grader.criteria.catalog import registered
from grader.criteria.loadgen.observed import observe
from grader.criteria.verdict import is_borderline
from grader.grading.grade import GradeRequest, grade
from grader.records.loadgen import HUNG, LoadgenRun
from grader.rubric import Scenario, load_rubric
from grader.rubric.durations import expected_s, limit_s

RUBRIC = load_rubric()


def test_each_scenarios_limit_follows_its_own_expected_duration() -> None:
    limits = RUBRIC.limits["loadgen"]
    slow_one = RUBRIC.scenarios["reasoning-content"]  # 24 tokens at 40 tokens/s, two waves
    assert expected_s(slow_one) == pytest.approx(2 * 24 / 40, rel=0.05)
    fast_one = RUBRIC.scenarios["cut"]
    assert limit_s(slow_one, limits) > limit_s(fast_one, limits) >= limits["start_s"]
    stalled = Scenario(
        "stalled", "", {**fast_one.server, "faults": [{"kind": "stall_before_headers", "seconds": 3}]}, fast_one.loadgen
    )
    assert expected_s(stalled) == pytest.approx(expected_s(fast_one) + 3)
    # a client's own time per request: 120 short requests get more than 6 fast ones, whatever the server's clock
    many = RUBRIC.scenarios["many"]
    own = limits["per_expected"] * many.loadgen["requests"] * limits["per_request_s"]
    assert expected_s(many) < 1.0 and own > 1.0
    assert limit_s(many, limits) == pytest.approx(limit_s(many, {**limits, "per_request_s": 0}) + own, abs=0.11)


def test_a_hung_run_says_what_the_ledger_shows_and_what_it_printed() -> None:
    scenario = RUBRIC.scenarios["baseline"]
    ledger = [
        {"id": "a", "number": 1, "status": 200, "arrival": 1.0, "finished": 1.5, "chunks": []},
        {"id": "b", "number": 2, "status": 200, "arrival": 1.1, "finished": None, "chunks": []},
    ]
    run = LoadgenRun(
        scenario,
        0,
        ["python", "lg.py"],
        None,
        HUNG,
        "sent 2\nwaiting for a slot",
        "",
        8.5,
        8.5,
        "out.json",
        '{"requests": []}',
        ledger,
    )
    assert run.stopped and run.problems == [run.hung()]
    assert "stopped after 8.5 s" in run.problems[0]
    assert "1 request(s) done, 1 still open and 14 of the 16 asked never sent" in run.problems[0]
    assert "waiting for a slot" in run.problems[0]
    # run on past its limit while the server still finished requests, then stopped: the message says both
    longer = LoadgenRun(
        scenario, 0, ["python", "lg.py"], None, HUNG, "", "", 12.5, 8.5, "out.json", None, ledger, extended_s=4.0
    )
    assert "stopped after 12.5 s: this scenario's limit is 8.5 s, and it ran on 4.0 s more" in longer.hung()
    assert LoadgenRun.from_record(longer.to_record()).extended_s == 4.0


def test_a_command_late_only_to_exit_is_a_rerun_on_a_busy_machine_and_a_fail_on_a_quiet_one() -> None:
    scenario = RUBRIC.scenarios["baseline"]
    asked = scenario.loadgen["requests"]
    done = [
        {"id": str(n), "number": n, "status": 200, "arrival": 1.0, "finished": 1.5, "chunks": []}
        for n in range(1, asked + 1)
    ]
    one_open = [*done[:-1], {**done[-1], "finished": None}]
    runs = {
        name: observe(
            LoadgenRun(scenario, 0, ["python", "lg.py"], None, HUNG, "", "", 9.2, 9.2, "out.json", None, ledger)
        )
        for name, ledger in (("done", done), ("open", one_open))
    }
    bands = RUBRIC.judging.borderline, RUBRIC.judging.busy_borderline
    for criterion_id in ("loadgen.runs", "loadgen.ttft"):
        check = registered()[criterion_id].judge
        late = check([runs["done"]], RUBRIC.criterion(criterion_id))
        hung = check([runs["open"]], RUBRIC.criterion(criterion_id))
        assert not late.passed and not hung.passed
        assert not is_borderline(late, *bands) and is_borderline(replace(late, busy="cores"), *bands)
        assert not is_borderline(replace(hung, busy="cores"), *bands)  # a request never finished: a fail, busy or not


@pytest.mark.slow
@pytest.mark.rotating(52)
def test_a_correct_but_slow_load_generator_and_sizing_command_lose_nothing(tmp_path: Path) -> None:
    # loadgen.runs reads every scenario's run, the unseen variants' too: a run stopped as hung fails it (the other
    # load-generator criteria read the same runs, whose results are the reference's); every sizing criterion.
    only = ("loadgen.runs", "sizing")
    result = grade(GradeRequest(slow(tmp_path / "slow"), tmp_path / "out", only=only, sandboxes=2, echo=lambda _: None))
    # a run stopped only for a late start or exit on a machine short of cores is left to a person, never failed
    withheld = {c.id for c in result.criteria if c.status == "inconclusive" and c.busy}
    lost = {c.id: c.output[:300] for c in result.criteria if c.status != "passed" and c.id not in withheld}
    assert not lost
    walls = [float(r["wall_s"]) for r in _records(tmp_path / "out", "loadgen-")]
    assert walls and min(walls) > 0.4  # each run really took twice its time


def _records(report: Path, prefix: str) -> list[dict[str, Any]]:
    import gzip
    import json

    return [json.loads(gzip.decompress(p.read_bytes())) for p in sorted((report / "runs").glob(f"{prefix}*.json.gz"))]


@pytest.mark.slow
@pytest.mark.rotating(38)
def test_a_load_generator_that_hangs_is_stopped_by_the_sections_budget(tmp_path: Path) -> None:
    started = time.monotonic()
    result = grade(GradeRequest(hung(tmp_path / "hung"), tmp_path / "out", only=("loadgen",), echo=lambda _: None))
    took = time.monotonic() - started
    budget = RUBRIC.limits["loadgen"]["budget_s"]
    assert took < budget + 3 * max(limit_s(s, RUBRIC.limits["loadgen"]) for s in RUBRIC.scenarios.values())
    outputs = [c.output for c in result.criteria]
    assert all(c.status == "failed" for c in result.criteria)
    assert any("the command hung: stopped after" in o and "It printed nothing." in o for o in outputs)
    assert any("not run: the loadgen section's" in o for o in outputs)  # the rest were not started
