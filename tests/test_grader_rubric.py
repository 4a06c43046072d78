"""The rubric: the kit's own loads and is coherent; overrides change only what they may, with errors by field."""

from __future__ import annotations

import json
from pathlib import Path

import jsonschema
import pytest
import yaml

from grader.criteria import loadgen
from grader.criteria import tests as candidate_tests
from grader.grading.rubric import DEFAULT_RUBRIC, RubricError, load_rubric

SCHEMAS = Path(__file__).resolve().parent.parent / "schemas" / "grader"


def test_the_kits_rubric_is_valid_and_every_criterion_has_a_check():
    rubric = load_rubric()
    jsonschema.validate(yaml.safe_load(DEFAULT_RUBRIC.read_text()), json.loads((SCHEMAS / "rubric.schema.json").read_text()))
    implemented = set(loadgen.CHECKS) | set(candidate_tests.CHECKS)
    graded_here = [c.id for c in rubric.criteria if c.deliverable in ("loadgen", "tests")]
    assert set(graded_here) <= implemented
    for c in rubric.criteria:
        if c.deliverable == "loadgen":
            assert c.scenarios, f"{c.id} runs no scenario"
        if c.abs_s is not None or c.rel is not None:
            # The candidate sees the tolerance: it is stated in the text in the unit it is checked in.
            assert c.tolerance_text.split(" / ")[0].replace(" ms", "") in c.text.replace(" ms", ""), c.id


def test_an_override_changes_weight_and_visibility(tmp_path):
    override = tmp_path / "team.yaml"
    override.write_text("rubric: 1\ncriteria:\n  loadgen.ttft: {weight: 5, visibility: hidden}\n")
    rubric = load_rubric(override=override)
    ttft = rubric.criterion("loadgen.ttft")
    assert (ttft.weight, ttft.visibility) == (5.0, "hidden")
    assert rubric.criterion("loadgen.tps").weight == load_rubric().criterion("loadgen.tps").weight


@pytest.mark.parametrize(("text", "says"), [
    ("rubric: 1\ncriteria:\n  loadgen.nope: {weight: 1}\n", "criteria.loadgen.nope: the rubric has no such criterion"),
    ("rubric: 1\ncriteria:\n  loadgen.ttft: {weight: -1}\n", "criteria.loadgen.ttft.weight"),
    ("rubric: 1\ncriteria:\n  loadgen.ttft: {visibility: secret}\n", "criteria.loadgen.ttft.visibility"),
    ("rubric: 1\ncriteria:\n  loadgen.ttft: {points: 2}\n", "criteria.loadgen.ttft"),
    ("rubric: 2\ncriteria: {}\n", "rubric"),
    ("rubric: 1\ncriteria: [\n", "line"),
])
def test_a_bad_override_is_reported_by_file_and_field(tmp_path, text, says):
    override = tmp_path / "team.yaml"
    override.write_text(text)
    with pytest.raises(RubricError) as caught:
        load_rubric(override=override)
    assert str(override) in str(caught.value) and says in str(caught.value)


def test_a_rubric_naming_a_missing_scenario_is_refused(tmp_path):
    data = yaml.safe_load(DEFAULT_RUBRIC.read_text())
    data["criteria"][0]["scenario"] = "no-such-scenario"
    path = tmp_path / "rubric.yaml"
    path.write_text(yaml.safe_dump(data))
    with pytest.raises(RubricError, match=r"criteria\[0\]\.scenario: no scenario named 'no-such-scenario'"):
        load_rubric(path)


def test_only_selects_by_deliverable_or_id_and_refuses_unknown_names():
    rubric = load_rubric()
    assert {c.deliverable for c in rubric.select(("tests",))} == {"tests"}
    assert [c.id for c in rubric.select(("loadgen.ttft",))] == ["loadgen.ttft"]
    with pytest.raises(RubricError, match="--only nothing"):
        rubric.select(("nothing",))
