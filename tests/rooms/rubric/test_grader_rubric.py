"""The rubric: the kit's own loads and is coherent; overrides change only what they may, with errors by field."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import jsonschema
import pytest
import yaml
from kit_paths import ROOT

from grader.criteria.catalog import registered
from grader.rubric import DEFAULT_RUBRIC, RubricError, load_rubric
from grader.rubric.live_pool import load_pool

SCHEMAS = ROOT / "schemas" / "grader"


def test_the_kits_rubric_is_valid_and_every_criterion_has_a_check() -> None:
    rubric = load_rubric()
    jsonschema.validate(
        yaml.safe_load(DEFAULT_RUBRIC.read_text()), json.loads((SCHEMAS / "rubric.schema.json").read_text())
    )
    checks = registered()
    pool = load_pool(yaml.safe_load(DEFAULT_RUBRIC.read_text()))
    assert pool is not None  # the kit ships its pool of live exercises
    live = set(pool.criteria)  # checks only live exercises judge
    assert {c.id for c in rubric.criteria} | live == set(checks), "every criterion has a check, every check a criterion"
    for c in rubric.criteria:
        assert checks[c.id].deliverable == c.deliverable
        assert set(checks[c.id].needs) <= set(c.tolerance), c.id
        if c.deliverable == "loadgen":
            assert c.scenarios, f"{c.id} runs no scenario"
        if c.abs_s is not None or c.rel is not None:
            # The candidate sees the tolerance: it is stated in the text in the unit it is checked in.
            assert c.tolerance_text.split(" / ")[0].replace(" ms", "") in c.text.replace(" ms", ""), c.id


def _rubric_with(tmp_path: Path, change: Callable[[dict[str, Any]], None]) -> Path:
    data = yaml.safe_load(DEFAULT_RUBRIC.read_text())
    change(data)
    path = tmp_path / "rubric.yaml"
    path.write_text(yaml.safe_dump(data))
    return path


def test_a_check_that_needs_a_number_its_entry_does_not_give_stops_the_load_naming_the_criterion(
    tmp_path: Path,
) -> None:
    def drop_send_lead(data: dict[str, Any]) -> None:
        entry = next(c for c in data["criteria"] if c["id"] == "loadgen.ttft")
        del entry["tolerance"]["send_lead_s"]

    with pytest.raises(RubricError, match=r"loadgen\.ttft: tolerance: its check needs send_lead_s"):
        load_rubric(_rubric_with(tmp_path, drop_send_lead), checks=registered())


def test_a_criterion_with_no_check_or_the_wrong_deliverable_is_refused(tmp_path: Path) -> None:
    def add_unknown(data: dict[str, Any]) -> None:
        data["criteria"].append(
            {
                "id": "loadgen.vibes",
                "deliverable": "loadgen",
                "weight": 1,
                "visibility": "public",
                "scenario": "baseline",
                "text": "Good vibes.",
            }
        )

    with pytest.raises(RubricError, match=r"loadgen\.vibes: no check is registered"):
        load_rubric(_rubric_with(tmp_path, add_unknown), checks=registered())

    def move(data: dict[str, Any]) -> None:
        next(c for c in data["criteria"] if c["id"] == "memo.p99-max")["deliverable"] = "sizing"

    with pytest.raises(RubricError, match=r"memo\.p99-max: its check judges the memo deliverable"):
        load_rubric(_rubric_with(tmp_path, move), checks=registered())


def test_the_gateway_plan_is_data_and_a_price_the_api_does_not_bill_is_refused(tmp_path: Path) -> None:
    plan = load_rubric().gateway
    assert plan.notice_s == pytest.approx(plan.health_interval_s + plan.first_byte_s + plan.notice_margin_s)
    # a case that stops the local server comes after every case that needs it running
    stops = [c.stop_local for c in plan.cases]
    assert any(stops) and stops == sorted(stops)

    def misprice(data: dict[str, Any]) -> None:
        data["gateway"]["servers"]["api"]["price_output"] = 25

    with pytest.raises(
        RubricError,
        match=r"servers\.api\.price_output: the API.s prices come from config\.api\.prices\.output_per_million_usd; leave it out",
    ):
        load_rubric(_rubric_with(tmp_path, misprice))

    def unknown_case(data: dict[str, Any]) -> None:
        next(c for c in data["criteria"] if c["id"] == "gateway.fallback-5xx")["cases"] = ["local-500", "local-501"]

    with pytest.raises(RubricError, match=r"no gateway case named 'local-501'"):
        load_rubric(_rubric_with(tmp_path, unknown_case))


def test_an_override_changes_weight_visibility_and_a_tolerance(tmp_path: Path) -> None:
    override = tmp_path / "team.yaml"
    override.write_text(
        "rubric: 1\ncriteria:\n  loadgen.ttft: {weight: 5, visibility: hidden, tolerance: {abs_s: 0.01}}\n"
    )
    rubric, kit = load_rubric(override=override), load_rubric()
    ttft = rubric.criterion("loadgen.ttft")
    assert (ttft.weight, ttft.visibility, ttft.tol("abs_s")) == (5.0, "hidden", 0.01)
    assert ttft.tol("send_lead_s") == kit.criterion("loadgen.ttft").tol("send_lead_s")  # the rest of the entry stays
    assert rubric.criterion("loadgen.tps").weight == kit.criterion("loadgen.tps").weight


@pytest.mark.parametrize(
    ("text", "says"),
    [
        (
            "rubric: 1\ncriteria:\n  loadgen.nope: {weight: 1}\n",
            "criteria.loadgen.nope: the rubric has no such criterion",
        ),
        ("rubric: 1\ncriteria:\n  loadgen.ttft: {weight: -1}\n", "criteria.loadgen.ttft.weight"),
        ("rubric: 1\ncriteria:\n  loadgen.ttft: {visibility: secret}\n", "criteria.loadgen.ttft.visibility"),
        ("rubric: 1\ncriteria:\n  loadgen.ttft: {points: 2}\n", "criteria.loadgen.ttft"),
        (
            "rubric: 1\ncriteria:\n  loadgen.ttft: {tolerance: {rel: 0.1}}\n",
            "criteria.loadgen.ttft.tolerance.rel: the criterion's entry gives no such number",
        ),
        ("rubric: 1\ncriteria:\n  loadgen.ttft: {tolerance: {abs_s: -1}}\n", "criteria.loadgen.ttft.tolerance.abs_s"),
        ("rubric: 2\ncriteria: {}\n", "rubric"),
        ("rubric: 1\ncriteria: [\n", "line"),
    ],
)
def test_a_bad_override_is_reported_by_file_and_field(tmp_path: Path, text: str, says: str) -> None:
    override = tmp_path / "team.yaml"
    override.write_text(text)
    with pytest.raises(RubricError) as caught:
        load_rubric(override=override)
    assert str(override) in str(caught.value) and says in str(caught.value)


def test_a_rubric_naming_a_missing_scenario_is_refused(tmp_path: Path) -> None:
    data = yaml.safe_load(DEFAULT_RUBRIC.read_text())
    data["criteria"][0]["scenario"] = "no-such-scenario"
    path = tmp_path / "rubric.yaml"
    path.write_text(yaml.safe_dump(data))
    with pytest.raises(RubricError, match=r"criteria\[0\]\.scenario: no scenario named 'no-such-scenario'"):
        load_rubric(path)


def test_only_selects_by_deliverable_or_id_and_refuses_unknown_names() -> None:
    rubric = load_rubric()
    assert {c.deliverable for c in rubric.select(("tests",))} == {"tests"}
    assert [c.id for c in rubric.select(("loadgen.ttft",))] == ["loadgen.ttft"]
    with pytest.raises(RubricError, match="--only nothing"):
        rubric.select(("nothing",))
