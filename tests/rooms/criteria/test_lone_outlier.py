"""One request alone read late is the machine's, not the candidate's: a TPS check failed by one request
while every other matches the ledger is borderline (run again, never a fail); a wrong definition, which
puts every request off, still fails outright. Judged from the reference's recorded baseline run."""

from __future__ import annotations

import copy
import json

from recorded import FIXTURES

from grader.criteria.loadgen.observed import Observed, observe
from grader.criteria.verdict import Verdict, is_borderline
from grader.grading.judging import judge
from grader.grading.sections import SECTIONS
from grader.records.book import RecordBook
from grader.rubric import load_rubric

RUBRIC = load_rubric()
TPS = RUBRIC.criterion("loadgen.tps")
BANDS = RUBRIC.judging.borderline, RUBRIC.judging.busy_borderline


def _baseline(*, slowed: dict[int, float]) -> Observed:
    """The reference's public baseline run, with the TPS of some of its request records scaled."""
    record = copy.deepcopy(RecordBook.read(FIXTURES / "reference").records["loadgen/baseline"])
    ((name, text),) = record["files"].items()
    results = json.loads(text)
    ok = [r for r in results["requests"] if r.get("tps") is not None]
    for i, factor in slowed.items():
        ok[i]["tps"] *= factor
    record["files"] = {name: json.dumps(results)}
    return observe(Observed.from_record(record))


def _verdict(run: Observed) -> Verdict:
    verdict = judge(TPS, SECTIONS["loadgen"], [run], RUBRIC)
    assert verdict is not None
    return verdict


def test_the_recorded_run_passes_as_it_is() -> None:
    verdict = _verdict(_baseline(slowed={}))
    assert verdict.passed and verdict.margin is not None and verdict.margin < RUBRIC.judging.lone_outlier


def test_one_request_read_24_percent_slow_is_borderline_not_failed() -> None:
    verdict = _verdict(_baseline(slowed={3: 0.76}))
    assert not verdict.passed and verdict.margin == 1.0 and is_borderline(verdict, *BANDS)
    assert "one request alone is outside the tolerance" in verdict.output


def test_two_requests_off_or_a_wrong_definition_still_fail_outright() -> None:
    two = _verdict(_baseline(slowed={3: 0.76, 7: 0.76}))
    assert not two.passed and not is_borderline(two, *BANDS), two.margin
    every = _verdict(_baseline(slowed={i: 0.7 for i in range(12)}))
    assert not every.passed and not is_borderline(every, *BANDS)
    for chaff in ("tps-includes-ttft", "throughput-as-tps"):
        run = observe(Observed.from_record(RecordBook.read(FIXTURES / chaff).records["loadgen/baseline"]))
        verdict = _verdict(run)
        assert not verdict.passed and not is_borderline(verdict, *BANDS), (chaff, verdict.margin)


TTFT = RUBRIC.criterion("loadgen.ttft")


def _late_first_tokens(late: dict[int, float]) -> Observed:
    """The reference's public baseline run, with the TTFT of some of its successful requests read later."""
    record = copy.deepcopy(RecordBook.read(FIXTURES / "reference").records["loadgen/baseline"])
    ((name, text),) = record["files"].items()
    results = json.loads(text)
    ok = [r for r in results["requests"] if r.get("ttft_s") is not None]
    for i, seconds in late.items():
        ok[i]["ttft_s"] += seconds
    record["files"] = {name: json.dumps(results)}
    return observe(Observed.from_record(record))


def test_one_first_token_read_late_alone_is_borderline_and_a_wrong_definition_still_fails() -> None:
    """Beside two CPU hogs a correct client read one of 16 first tokens 86 ms late (bench/results/corners.json):
    judged again, not failed; two requests off, or every request (the TTFT-from-headers chaff), fail outright."""
    one = judge(TTFT, SECTIONS["loadgen"], [_late_first_tokens({3: 0.086})], RUBRIC)
    assert one is not None and not one.passed and one.margin == 1.0 and is_borderline(one, *BANDS)
    two = judge(TTFT, SECTIONS["loadgen"], [_late_first_tokens({3: 0.086, 7: 0.086})], RUBRIC)
    assert two is not None
    assert not two.passed and not is_borderline(two, *BANDS), two.margin
    run = observe(Observed.from_record(RecordBook.read(FIXTURES / "ttft-from-headers").records["loadgen/baseline"]))
    verdict = judge(TTFT, SECTIONS["loadgen"], [run], RUBRIC)
    assert verdict is not None
    assert not verdict.passed and not is_borderline(verdict, *BANDS), verdict.margin


def test_a_lone_late_first_token_then_a_rerun_within_the_tolerance_passes_and_twice_alone_goes_to_a_person() -> None:
    """Beside two CPU hogs a correct client read one first token late alone, then all 16 within 0.89 of the
    tolerance on the rerun (bench/results/corners.json): it passes. One request alone late on both attempts still
    goes to a person: the rule was missed twice."""
    from grader.grading.judging import decide, needs_rerun, result_of

    lone, near = _late_first_tokens({3: 0.086}), _late_first_tokens({5: 0.020})
    near_verdict = judge(TTFT, SECTIONS["loadgen"], [near], RUBRIC)
    assert near_verdict is not None and near_verdict.passed and is_borderline(near_verdict, *BANDS)
    lone_verdict = judge(TTFT, SECTIONS["loadgen"], [lone], RUBRIC)
    assert lone_verdict is not None and needs_rerun(lone_verdict, RUBRIC)
    then = decide(lone_verdict, near_verdict, RUBRIC)
    assert then.attempts == 2 and not then.inconclusive
    assert result_of(TTFT, then, duration_s=0.0).status == "passed"
    twice = decide(lone_verdict, lone_verdict, RUBRIC)
    assert twice.inconclusive
