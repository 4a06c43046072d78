"""Each submission is graded by the brief it was given: the contract version its submission.yaml declares.

The rubric as contract 1 had it sends no scenario a flag that brief never had, runs no gateway case it never
asked for, lists a criterion it never stated as "not in this candidate's brief" (out of the maximum), and
judges a rule whose meaning changed by the meaning it gave. A run that wrote nothing is charged once, whatever
the version. A bundle says what made it, and a grade says what it followed.
"""

from __future__ import annotations

import csv
import io
import json
import shutil
from pathlib import Path

import pytest
import yaml
from kit_paths import ROOT
from recorded import FIXTURES

from grader.contract import load_submission, schema_errors
from grader.criteria.catalog import registered
from grader.criteria.loadgen.observed import Observed, observe
from grader.criteria.loadgen.summary import check_percentiles, check_summary
from grader.grading.judging import NOT_IN_BRIEF
from grader.grading.rejudge import rejudge
from grader.kit.bundle import edition_stamp, stamp
from grader.records.book import RecordBook
from grader.round.summary import read_row, to_csv
from grader.rubric import RubricError, load_rubric
from grader.running.gateway import gateway_config
from grader.shared.contracts import LATEST, Edition, kit_version, supported

RUBRIC = load_rubric(checks=registered())
OLD = RUBRIC.for_contract(1)
MID = RUBRIC.for_contract(2)
#: What contract 1's brief never stated, and what contract 2's never did (docs/contract.md, "Versions").
NEW_IN_2 = {"loadgen.timeout", "sizing.refuses", "memo.measured"}
NEW_IN_3 = {"loadgen.prompt-tokens"}
NOT_IN_1 = NEW_IN_2 | NEW_IN_3


def test_every_issued_version_is_graded_and_the_latest_is_the_kits_own() -> None:
    assert supported() == (1, 2, 3, 4) and LATEST == 4 and RUBRIC.contract == LATEST
    assert RUBRIC.for_contract(LATEST) is RUBRIC
    for name in ("starter", "submissions/reference"):
        assert load_submission(ROOT / name).contract == LATEST, name


def test_no_contract_1_scenario_sends_a_flag_that_brief_never_had() -> None:
    assert any("timeout_s" in s.loadgen for s in RUBRIC.scenarios.values())  # the latest brief has --timeout-s
    assert not [name for name, s in OLD.scenarios.items() if "timeout_s" in s.loadgen]
    assert set(OLD.scenarios) < set(RUBRIC.scenarios)
    for criterion in OLD.criteria:  # no criterion reads a run contract 1 never makes
        assert set(criterion.scenarios) <= set(OLD.scenarios), criterion.id
        assert set(criterion.cases) <= {c.name for c in OLD.gateway.cases}, criterion.id


def test_the_criteria_contract_1_never_stated_are_out_of_its_brief_and_the_rest_keep_their_weight() -> None:
    out = {c.id for c in OLD.criteria if not c.in_brief}
    assert out == NOT_IN_1
    assert {c.id for c in MID.criteria if not c.in_brief} == NEW_IN_3
    assert all(c.in_brief for c in RUBRIC.criteria)
    assert [c.id for c in OLD.criteria] == [c.id for c in RUBRIC.criteria]  # listed, in the same order


def test_contract_2_is_never_sent_a_server_without_usage_its_brief_promised_it_would_not_meet() -> None:
    """Contract 2's brief said every scenario sends usage: its load generator keeps the multi-token rule as that
    brief stated it, judged on the multi-token run alone; contract 3's meets a server that sends none too."""
    assert "no-usage" in RUBRIC.scenarios and "no-usage" not in MID.scenarios and "no-usage" not in OLD.scenarios
    assert RUBRIC.criterion("loadgen.multi-token").scenarios == ("multi-token", "no-usage")
    for then in (MID, OLD):
        multi = then.criterion("loadgen.multi-token")
        assert multi.scenarios == ("multi-token",) and "content delta" not in multi.text
    # events over several data: lines were in contract 2's "any framing the SSE standard allows", not in 1's list
    assert "sse-multiline" in MID.criterion("loadgen.sse-framing").scenarios
    assert "sse-multiline" not in OLD.criterion("loadgen.sse-framing").scenarios


def test_a_rule_whose_meaning_changed_is_judged_by_the_meaning_contract_1_gave() -> None:
    # contract 2 and later: a memo that quotes no percentile has nothing to judge and fails; contract 1 let it pass
    for cid in ("memo.percentile-n", "memo.p99-max"):
        assert RUBRIC.criterion(cid).tol("percentiles_needed_count") == 1
        assert OLD.criterion(cid).tol("percentiles_needed_count") == 0
        assert OLD.criterion(cid).text != RUBRIC.criterion(cid).text
    # the gateway rules keep the cases contract 1 asked for, and lose the ones it did not
    assert "require-bad" in OLD.criterion("gateway.require-field").cases
    assert "require-null" not in OLD.criterion("gateway.require-field").cases
    assert set(OLD.criterion("gateway.committed-stream").cases) == {
        "local-cut",
        "local-stream-error",
        "local-no-done",
        "api-cut",
    }


def test_the_slot_test_meets_drawn_servers_from_contract_4_and_an_earlier_brief_is_judged_without_them() -> None:
    latest, three = RUBRIC.criterion("tests.slot-chaff"), RUBRIC.for_contract(3).criterion("tests.slot-chaff")
    assert latest.variants == ("slots", "drawn-slots") and "FAKE_SERVER_DRAW" in latest.text
    assert three.variants == ("slots",) and "FAKE_SERVER_DRAW" not in three.text and three.in_brief
    assert OLD.criterion("tests.slot-chaff").variants == ("slots",)


def test_a_gateway_is_told_its_own_contract_in_its_config() -> None:
    urls = {"base_url": "http://127.0.0.1:1/v1", "url": "http://127.0.0.1:1"}
    for rubric, version in ((RUBRIC, 4), (MID, 2), (OLD, 1)):
        config = gateway_config(rubric.gateway, urls, urls)
        assert config["contract"] == version
        assert schema_errors("gateway-config", config) == []


def test_the_rubric_refuses_an_earlier_meaning_for_a_version_it_never_issued(tmp_path: Path) -> None:
    data = yaml.safe_load((ROOT / "grader" / "rubric" / "rubric.yaml").read_text())
    entry = next(c for c in data["criteria"] if c["id"] == "memo.p99-max")
    entry["earlier"] = {7: {"tolerance": {"percentiles_needed_count": 0}}}
    bad = tmp_path / "rubric.yaml"
    bad.write_text(yaml.safe_dump(data, sort_keys=False))
    with pytest.raises(RubricError, match=r"earlier\.7: not an earlier contract version"):
        load_rubric(bad, checks=registered())
    entry["earlier"] = {1: {"scenario": "*"}}  # an earlier meaning names its scenarios: "*" would read none
    bad.write_text(yaml.safe_dump(data, sort_keys=False))
    with pytest.raises(RubricError, match=r"earlier\.1\.scenario: no scenario named '\*'"):
        load_rubric(bad, checks=registered())


def test_rejudged_as_contract_1_the_new_rules_leave_the_maximum_and_the_others_keep_their_points(
    tmp_path: Path,
) -> None:
    folder = tmp_path / "graded"
    shutil.copytree(FIXTURES / "reference", folder / "runs", ignore=shutil.ignore_patterns("source.txt"))
    now = rejudge(folder, out=tmp_path / "now")
    index = json.loads((folder / "runs" / "index.json").read_text())
    index["edition"] = {"name": "default", "contract": 1, "kit": "1.0.0"}
    (folder / "runs" / "index.json").write_text(json.dumps(index))
    then = rejudge(folder, out=tmp_path / "then")
    by_id = {c.id: c for c in then.criteria}
    for cid in NOT_IN_1 & set(by_id):
        assert by_id[cid].status == "skipped" and by_id[cid].weight == 0
        assert by_id[cid].output.startswith(NOT_IN_BRIEF)
    dropped = sum(c.weight for c in now.criteria if c.id in NOT_IN_1)
    assert dropped > 0 and then.max_score == pytest.approx(now.max_score - dropped)
    kept = {c.id: c.status for c in now.criteria if c.id not in NOT_IN_1}
    assert {c.id: c.status for c in then.criteria if c.id not in NOT_IN_1} == kept
    assert then.edition["contract"] == 1
    report = json.loads((tmp_path / "then" / "report.json").read_text())
    assert report["extra_data"]["kit"]["edition"]["contract"] == 1
    assert "Graded against contract 1" in report["output"]
    assert "<dt>Graded against</dt><dd>contract 1, edition default" in (tmp_path / "then" / "report.html").read_text()
    rows = list(csv.DictReader(io.StringIO(to_csv([read_row(tmp_path / "then"), read_row(tmp_path / "now")]))))
    assert [(r["edition"], r["contract"]) for r in rows] == [("default", "1"), ("default", "4")]


def _runs() -> list[Observed]:
    book = RecordBook.read(FIXTURES / "reference")
    names = [k for k in book.records if k.startswith("loadgen/") and "@" not in k and ".v" not in k]
    return [observe(Observed.from_record(book.records[k])) for k in sorted(names)]


def _wrote_nothing(run: Observed) -> Observed:
    """The run as a command that exited before writing its results file would have left it."""
    return observe(Observed.from_record({**run.to_record(), "files": {run.results_file: None}, "exit_code": 2}))


def test_a_run_that_wrote_nothing_is_charged_once_not_again_to_the_criteria_over_every_run() -> None:
    runs = _runs()
    percentiles, summary = RUBRIC.criterion("loadgen.percentiles"), RUBRIC.criterion("loadgen.summary")
    assert check_percentiles(runs, percentiles).passed and check_summary(runs, summary).passed
    lost = _wrote_nothing(runs[0])
    one_lost = [lost, *runs[1:]]
    for check, criterion in ((check_percentiles, percentiles), (check_summary, summary)):
        verdict = check(one_lost, criterion)
        assert verdict.passed, verdict.output
        assert f"charged to loadgen.runs: {lost.scenario.name}" in verdict.output
    none = [_wrote_nothing(r) for r in runs]
    for check, criterion in ((check_percentiles, percentiles), (check_summary, summary)):
        verdict = check(none, criterion)
        assert not verdict.passed and "nothing to judge" in verdict.output


def test_a_bundle_says_what_made_it_and_a_grade_follows_it(tmp_path: Path) -> None:
    starter = tmp_path / "starter"
    shutil.copytree(ROOT / "starter", starter, ignore=shutil.ignore_patterns("__pycache__"))
    edition = edition_stamp(ROOT)
    stamp(starter, edition)
    data = yaml.safe_load((starter / "submission.yaml").read_text())
    assert data["edition"] == edition and schema_errors("submission", data) == []
    assert "# How the grader runs your work" in (starter / "submission.yaml").read_text()  # its comments kept
    line = load_submission(starter).follows()
    assert line.startswith("follows contract 4; its bundle: name default") and edition["rubric"] in line
    assert Edition.of(data) == Edition("default", 4, kit_version())
    brief = (starter / "TASK.md").read_text().splitlines()
    assert brief[0].startswith("# ") and f"contract {LATEST}, kit {kit_version()}" in brief[2]
    old = yaml.safe_load((ROOT / "tests" / "fixtures" / "contract1_reference" / "submission.yaml").read_text())
    assert (
        Edition.of(old).contract == 1
        and "earlier brief" in load_submission(ROOT / "tests" / "fixtures" / "contract1_reference").follows()
    )
