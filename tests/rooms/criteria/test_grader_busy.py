"""A machine too busy to keep time turns a timing answer into a rerun, then `inconclusive`.

Two signals, both from what the grader can see: the fake servers' own steps running late (every
ledger record's `step_lag_max`), and a premise the grader waited for but never saw hold (a gateway
that probes /health, yet did not ask it while the grader waited for the probe to see a 503).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from grader_cli import run_grader
from kit_paths import ROOT

from grader.criteria.busy import busy_from_ledgers
from grader.criteria.verdict import Verdict, is_borderline
from grader.kit.chaff import list_chaff, materialize
from grader.rubric import load_rubric

CHAFF = ROOT / "submissions" / "chaff"


def test_a_busy_machine_widens_the_band_that_earns_a_rerun() -> None:
    judging = load_rubric().judging
    quiet, busy = judging.borderline, judging.busy_borderline

    def borderline(verdict: Verdict) -> bool:
        return is_borderline(verdict, quiet, busy)

    assert quiet[0] < busy[0] == 1.0 and quiet[1] < busy[1]
    for margin in (busy[0], 2.0, busy[1]):
        assert borderline(Verdict(False, "", margin=margin, busy="steps ran late"))
    assert not borderline(Verdict(False, "", margin=2.0))  # on a quiet machine 2x the tolerance stands
    assert not borderline(Verdict(True, "", margin=quiet[0] - 0.01))
    # a busy machine only makes a client late: within the tolerance, a pass stands where quiet it would be rerun
    assert borderline(Verdict(True, "", margin=0.9)) and not borderline(Verdict(True, "", margin=0.9, busy="late"))
    assert not borderline(Verdict(False, "", margin=busy[1] + 0.01, busy="steps ran late"))
    assert not borderline(Verdict(True, "", margin=None, busy="steps ran late"))  # no margin: nothing to widen


def test_late_steps_in_a_ledger_say_the_machine_was_busy() -> None:
    limit = load_rubric().judging.loadgen_busy_lag_s
    calm = [{"step_lag_max": 0.002}, {"step_lag_max": limit}, {}]
    assert busy_from_ledgers([calm, []], limit_s=limit) is None
    why = busy_from_ledgers([calm, [{"step_lag_max": 0.080}]], limit_s=limit)
    assert why is not None and "80 ms" in why
    assert busy_from_ledgers([[{"step_lag_max": 0.080}]], limit_s=0.25) is None


def _starved_probe(tmp_path: Path) -> Path:
    """The chaff that sends `require: local` to the API when the probe says the local route is down,
    with a probe loop as late as a starved process's: it probes at start, then only every 30 s."""
    (chaff,) = [c for c in list_chaff(CHAFF) if c.name == "gateway-require-bypass-unhealthy"]
    folder = materialize(chaff.path, tmp_path / "starved")
    health = folder / "gateway" / "health.py"
    text = health.read_text()
    assert "await asyncio.sleep(self.interval_s)\n" in text
    health.write_text(text.replace("await asyncio.sleep(self.interval_s)\n", "await asyncio.sleep(30.0)\n"))
    return folder


@pytest.mark.slow
def test_a_probe_that_never_saw_the_503_makes_the_case_inconclusive_not_a_wrong_pass(tmp_path: Path) -> None:
    folder = _starved_probe(tmp_path)
    out = tmp_path / "report"
    done = run_grader(
        "grade", "--seed", "0", folder, "--out", out, "--only", "gateway.require-local-unhealthy", timeout=300
    )
    assert done.returncode == 0, done.stderr[-2000:]
    (test,) = [
        t
        for t in json.loads((out / "report.json").read_text())["tests"]
        if t["name"].startswith("gateway.require-local-unhealthy")
    ]
    # Its probe never asked while /health answered 503, so "the probe has seen it" never held: the
    # chaff's defect (skip to the API when the probe says down) was not exercised. Not a pass.
    assert test["extra_data"]["status"] == "inconclusive" and test["extra_data"]["attempts"] == 2, test
    assert test["score"] == 0
    assert "INCONCLUSIVE" in test["output"] and "premise never held" in test["output"], test["output"]
    # rl-unhealthy follows rl-unhealthy-stall: it waits for the probe to see /health healthy again
    # first, which this probe never does either.
    assert "turned 503" in test["output"] and "turned healthy again" in test["output"], test["output"]


def test_a_gateway_that_answers_alone_at_once_is_judged_however_busy_the_machine() -> None:
    """No timeout can fire in a few milliseconds: a 500 the gateway gave by itself, asking no route, is its own
    doing; a 503 so given may come from a probe a busy machine made late, and a slow answer from a timeout."""
    from grader.criteria.gateway.answers import timing_could_matter
    from grader.records.gateway import CaseRun
    from grader.rubric.gateway_plan import Case

    plan = load_rubric().gateway
    case = Case("no-max-tokens", "a body without max_tokens")

    def run(status: int, took_s: float, *, local: bool = False) -> CaseRun:
        answer = {"status": status, "sent_at": 100.0, "done_at": 100.0 + took_s}
        ledger = [{"status": 200, "arrival": 100.001, "headers_sent": 100.0 + plan.first_byte_s}] if local else []
        return CaseRun(case, t0=100.0, answers=[answer], local=ledger)

    assert not timing_could_matter(run(500, 0.01), plan)
    assert timing_could_matter(run(503, 0.01), plan)  # the route looked down: a late probe can do that
    assert timing_could_matter(run(500, plan.first_byte_s), plan)  # slow enough for a timeout to have fired
    assert timing_could_matter(run(500, 0.01, local=True), plan)  # its local server answered late


def test_a_stream_long_enough_for_total_s_to_bite_is_a_timing_question_on_a_busy_machine() -> None:
    """A 1.2 s stream under a total_s of 2 s: a gateway starved of its cores relays it late and gives up at total_s,
    though its local server answered at once. That was a false fail of the reference beside CPU hogs (the unseen
    variant of slow-local-stream, whose total_s is drawn below the published 3 s)."""
    from grader.criteria.gateway.answers import timing_could_matter
    from grader.records.gateway import CaseRun
    from grader.rubric.gateway_plan import Case, Send

    plan = load_rubric().gateway
    case = Case(
        "slow-local-stream", "a local stream of 30 tokens at 25 tokens/s", send=Send(stream=True, max_tokens=30)
    )

    def run(stream_s: float) -> CaseRun:
        answer = {"status": 200, "sent_at": 100.0, "done_at": 100.0 + plan.total_s}
        record = {
            "status": 200,
            "arrival": 100.002,
            "headers_sent": 100.01,
            "first_content": 100.05,
            "finished": 100.05 + stream_s,
        }
        return CaseRun(case, t0=100.0, answers=[answer], local=[record])

    assert timing_could_matter(run(0.6 * plan.total_s), plan)  # most of total_s: a late relay can run past it
    assert not timing_could_matter(run(0.05), plan)  # answered and done at once: nothing timing could explain
