"""What a replay names as failing, read from recorded runs with nothing running: a check of each run's
summary fails on runs (scenarios), a check of each request on requests; from a report, a replay runs
again only the scenarios or cases that failed it there."""

from __future__ import annotations

import pytest
from recorded import FIXTURES, ROOT

from grader.criteria.catalog import registered
from grader.grading.replay import ReplayError, _narrowed, _option, failing_in, failing_runs
from grader.kit.chaff import list_chaff
from grader.records.book import RecordBook
from grader.rubric import load_rubric

RUBRIC = load_rubric()
CHAFF = {c.name: c for c in list_chaff(ROOT / "submissions" / "chaff")}
CHECKS = registered()
TARGETS = [(c.name, t) for c in CHAFF.values() for t in c.targets if RUBRIC.criterion(t).deliverable == "loadgen"]


@pytest.mark.parametrize(("chaff", "criterion_id"), TARGETS, ids=[f"{c}-{t}" for c, t in TARGETS])
def test_a_failed_load_generator_criterion_names_runs_or_requests_as_its_check_judges(
    chaff: str, criterion_id: str
) -> None:
    book = RecordBook.read(FIXTURES / chaff)
    status, failing = failing_in(book, RUBRIC, criterion_id)
    assert status == "failed" and failing, f"{chaff}'s records fail {criterion_id} on nothing named"
    criterion = RUBRIC.criterion(criterion_id)
    public = {name.split("#")[0].partition(".v")[0] for name in failing}
    assert public <= set(criterion.scenarios), failing
    if CHECKS[criterion_id].by_run:  # a run judged as a whole (its exit, summary, peak): the runs that failed it
        assert not any("#" in name for name in failing), failing
        assert len(set(failing)) == len(failing)
    else:  # request by request: scenario#index
        assert all("#" in name for name in failing), failing
    runs = failing_runs(book, RUBRIC, criterion_id)
    assert set(runs) == public and len(runs) == len(public)


def test_a_report_replays_a_whole_section_criterion_on_fewer_runs_than_it_judges() -> None:
    """The summary's counts are wrong only where a request failed: the replay from the report runs those."""
    book = RecordBook.read(FIXTURES / "summary-counts-failed")
    runs = failing_runs(book, RUBRIC, "loadgen.summary")
    everything = RUBRIC.criterion("loadgen.summary").scenarios
    assert "cut" in runs and "baseline" in runs and "concurrency" not in runs
    assert 0 < len(runs) < len(everything) / 2


def test_a_replay_can_be_narrowed_only_to_runs_its_criterion_judges() -> None:
    summary, fallback = RUBRIC.criterion("loadgen.summary"), RUBRIC.criterion("gateway.no-fallback-4xx")
    assert _narrowed(summary, RUBRIC, _option(summary, None, "cut")) == ("cut",)
    assert _narrowed(fallback, RUBRIC, _option(fallback, "local-404", None)) == ("local-404",)
    for criterion, case, scenario, words in [
        (summary, None, "nope", "nope: loadgen.summary judges the scenarios"),
        (RUBRIC.criterion("loadgen.cut"), None, "baseline", "baseline: loadgen.cut judges the scenarios cut"),
        (fallback, None, "cut", "--scenario cut: gateway.no-fallback-4xx is not judged from load-generator"),
        (summary, "local-404", None, "--case local-404: loadgen.summary is judged from load-generator scenarios"),
        (RUBRIC.criterion("memo.front-matter"), None, None, None),
    ]:
        if words is None:
            assert _narrowed(criterion, RUBRIC, _option(criterion, case, scenario)) == ()
            continue
        with pytest.raises(ReplayError, match=words):
            _narrowed(criterion, RUBRIC, _option(criterion, case, scenario))
    with pytest.raises(ReplayError, match="memo.front-matter is judged from the memo section"):
        _narrowed(RUBRIC.criterion("memo.front-matter"), RUBRIC, ("x",))


def test_a_gateway_check_of_the_whole_run_that_names_no_case_failed_the_run() -> None:
    """/stats latency off is no one case's fault: the replay names the run, and from a report runs it whole."""
    book = RecordBook.read(FIXTURES / "gateway-latency-to-first-byte")
    status, failing = failing_in(book, RUBRIC, "gateway.stats-latency")
    assert status == "failed" and failing and all(name.startswith("the gateway run") for name in failing)
    assert failing_runs(book, RUBRIC, "gateway.stats-latency") == ()
    cut = RecordBook.read(FIXTURES / "gateway-cut-not-counted")  # the count is off after one case: that case
    assert failing_runs(cut, RUBRIC, "gateway.stats-counts") == ("local-cut",)


def test_grader_replay_makes_as_many_runs_at_once_by_default_as_a_replay_does() -> None:
    """The CLI writes its `--sandboxes` default out (it imports the grading modules lazily); it is the replay's."""
    from click.testing import CliRunner

    from grader.cli import main
    from grader.grading.replay import SPREAD

    help_text = CliRunner().invoke(main, ["replay", "--help"]).output
    assert f"[default: {SPREAD}; x>=1]" in " ".join(help_text.split()), help_text
