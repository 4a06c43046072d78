"""The self-check explains itself: a timing check names its closest call with its limit, passed or not; the
terminal shows it under a near miss, with a replay command; a check of some parts keeps the last whole
check's report. Judged from the reference's recorded runs, one request's `start` moved."""

from __future__ import annotations

import copy
import json
from pathlib import Path

from recorded import FIXTURES

from grader.candidate.check import DEFAULT_OUT, report_folder
from grader.criteria.loadgen.observed import Observed, observe
from grader.grading.judging import decide, judge, needs_rerun, result_of
from grader.grading.sections import SECTIONS
from grader.outcome import Grade
from grader.records.book import RecordBook
from grader.reports.text import progress, replay_command, score_table
from grader.rubric import load_rubric

RUBRIC = load_rubric()
TTFT = RUBRIC.criterion("loadgen.ttft")


def _baseline(moved_ms: float) -> tuple[Observed, int]:
    """The reference's recorded baseline run with its last request's `start` (and so its TTFT) moved
    `moved_ms` earlier; returns the run and that request's index. The last request waited for its slot, so the
    100 ms limit holds for it (the first wave may carry a cold start)."""
    record = copy.deepcopy(RecordBook.read(FIXTURES / "reference").records["loadgen/baseline"])
    ((name, text),) = record["files"].items()
    results = json.loads(text)
    ok = [r for r in results["requests"] if r["outcome"] == "ok"]
    last = max(ok, key=lambda r: r["start"])
    last["start"] -= moved_ms / 1000
    last["ttft_s"] += moved_ms / 1000
    record["files"] = {name: json.dumps(results)}
    return observe(Observed.from_record(record)), int(last["index"])


def test_a_pass_close_to_its_limit_names_the_request_and_the_limit() -> None:
    run, index = _baseline(moved_ms=80)
    verdict = judge(TTFT, SECTIONS["loadgen"], [run], RUBRIC)
    assert verdict is not None and verdict.passed
    limit_ms = TTFT.tol("send_lead_s") * 1000
    assert verdict.margin is not None and verdict.margin >= 0.8  # 80 ms and the loopback's own lead, of 100
    assert verdict.closest.startswith(f"request {index}: `start` is ")
    assert verdict.closest.endswith(f"before the server saw the request; allowed {limit_ms:.0f} ms")


def test_the_terminal_and_the_table_show_a_near_miss_with_its_replay() -> None:
    run, index = _baseline(moved_ms=60)
    section = SECTIONS["loadgen"]
    first = judge(TTFT, section, [run], RUBRIC)
    assert first is not None
    decision = decide(first, None, RUBRIC)
    result = result_of(TTFT, decision, duration_s=0.01)
    lines: list[str] = []
    progress(lines.append)(result)
    assert lines[0].startswith("PASS") and "loadgen.ttft" in lines[0]
    assert result.margin is not None and 0.5 <= result.margin < RUBRIC.judging.borderline[0]  # near, not borderline
    assert result.near_miss and f"closest call (margin {result.margin:.2f}): request {index}" in lines[1]
    grade = Grade("sub", None, 7, "2026-01-01T00:00:00+00:00", 1.0, True, "", "rubric.yaml", criteria=[result])
    table = score_table(grade)
    assert "Near misses (passed, but close to a limit" in table and f"request {index}" in table
    assert replay_command(grade, result, candidate=True) == "grader replay sub loadgen.ttft --seed 7"


def test_a_pass_clear_of_its_limit_gets_no_replay_and_no_near_miss() -> None:
    run, _ = _baseline(moved_ms=0)
    first = judge(TTFT, SECTIONS["loadgen"], [run], RUBRIC)
    assert first is not None and not needs_rerun(first, RUBRIC)
    decision = decide(first, None, RUBRIC)
    result = result_of(TTFT, decision, duration_s=0.01)
    assert result.status == "passed" and not result.near_miss
    grade = Grade("sub", None, 7, "2026-01-01T00:00:00+00:00", 1.0, True, "", "rubric.yaml", criteria=[result])
    assert replay_command(grade, result) is None and "Near misses" not in score_table(grade)


def test_a_check_of_some_parts_writes_beside_the_last_whole_check() -> None:
    assert report_folder(None, ()) == DEFAULT_OUT
    assert report_folder(None, ("gateway",)) == DEFAULT_OUT / "only-gateway"
    assert report_folder(None, ("memo", "gateway")) == DEFAULT_OUT / "only-gateway-memo"
    assert report_folder(Path("mine"), ("gateway",)) == Path("mine")


def test_a_pass_close_to_its_limit_twice_passes_and_a_rerun_that_failed_is_left_to_a_person() -> None:
    """Borderline twice: within the tolerance both times meets the rule (a correct client on a loaded machine);
    a failed attempt beside a near pass cannot tell the answer from the machine, and goes to a person."""
    near, _ = _baseline(moved_ms=80)  # margin about 0.8: in the band that earns a rerun, passing
    over, _ = _baseline(moved_ms=110)  # just past the 100 ms limit: failing, still in the band
    section = SECTIONS["loadgen"]
    first = judge(TTFT, section, [over], RUBRIC)
    assert first is not None and not first.passed and first.margin is not None and first.margin <= 1.5
    near_verdict = judge(TTFT, section, [near], RUBRIC)
    assert near_verdict is not None and needs_rerun(near_verdict, RUBRIC)
    twice = decide(near_verdict, near_verdict, RUBRIC)
    assert twice.attempts == 2 and not twice.inconclusive and twice.verdict.passed
    result = result_of(TTFT, twice, duration_s=0.01)
    assert result.status == "passed" and result.rerun.startswith("attempt 1 was borderline")
    # a near pass, then a failed rerun: the machine's or the answer's, a person decides
    mixed = decide(near_verdict, first, RUBRIC)
    assert mixed.inconclusive
    assert result_of(TTFT, mixed, duration_s=0.01).status == "inconclusive"
    # the other order: the failed attempt was one request alone (first.outlier_alone), and the rerun kept within
    assert first.outlier_alone
    after = decide(first, near_verdict, RUBRIC)
    assert not after.inconclusive and after.verdict.passed
