"""Unseen variants: drawn the same way for the same seed, always within their ranges and the shape of their
scenario, refused by name when the file is wrong, and never run by the candidate's self-check."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from grader.grading.grade import GradeRequest, unseen_material
from grader.rubric import Rubric, load_rubric
from grader.rubric.draws import get_path
from grader.rubric.variants import VARIANTS_FILE, Variants, VariantsError, gateway_criterion, load_variants

RUBRIC = load_rubric()
VARIANTS = load_variants(RUBRIC)
SEEDS = range(200)
#: The default edition and three drawn ones: the variants are drawn around each edition's published numbers.
EDITIONS = ("default", "spring-2027", "autumn-2027", "cohort-12")


def _variants() -> Variants:
    assert VARIANTS is not None, f"{VARIANTS_FILE} is the grader's: it must be in a checkout"
    return VARIANTS


def test_the_same_seed_draws_the_same_variant_and_other_seeds_draw_others() -> None:
    v = _variants()
    for name in v.loadgen:
        base = RUBRIC.scenarios[name]
        assert v.scenario(base, 1, 7) == v.scenario(base, 1, 7)
        drawn = {repr(v.scenario(base, 1, seed).to_dict()) for seed in range(20)}
        assert len(drawn) > 1, f"{name}: every seed draws the same variant"
        assert v.scenario(base, 1, 7).name == f"{name}.v1"
    assert v.gateway_plan(RUBRIC.gateway, 1, 3) == v.gateway_plan(RUBRIC.gateway, 1, 3)
    assert v.gateway_plan(RUBRIC.gateway, 1, 3) != v.gateway_plan(RUBRIC.gateway, 1, 4)


@pytest.mark.parametrize("edition", EDITIONS)
def test_every_draw_keeps_its_scenarios_shape(edition: str) -> None:
    """The ranges promise: a fault fires before the answer ends, a reasoning model still answers, a concurrency
    is reachable, an error status is of the public one's family but never the public one."""
    v, rubric = _variants(), RUBRIC.for_edition(edition)
    checked = {"after_tokens": 0, "status": 0, "reasoning": 0}
    for seed in SEEDS:
        for name in v.loadgen:
            public = rubric.scenarios[name]
            s = v.scenario(public, 1, seed)
            flags = s.loadgen
            for fault, original in zip(s.server.get("faults") or (), public.server.get("faults") or (), strict=True):
                if "after_tokens" in fault:
                    assert 1 <= fault["after_tokens"] < flags["max_tokens"], (name, seed, fault)
                    checked["after_tokens"] += 1
                if fault["kind"] == "http_error" and fault["status"] != original["status"]:
                    assert fault["status"] // 100 == original["status"] // 100, (name, seed, fault)
                    public_statuses = {f.get("status") for f in public.server.get("faults") or ()}
                    assert fault["status"] not in public_statuses, (name, seed, fault)
                    checked["status"] += 1
            if s.server.get("reasoning") and name != "reasoning-empty":
                assert flags["max_tokens"] > s.server["reasoning_tokens"], (name, seed)
                checked["reasoning"] += 1
            assert flags["requests"] >= flags["concurrency"] or name == "queueing", (name, seed)
    # each promise was checked on some draw: variants that lost their faults or their reasoning would check nothing
    assert all(n >= len(SEEDS) for n in checked.values()), checked


@pytest.mark.parametrize("edition", EDITIONS)
def test_every_gateway_draw_keeps_the_timeouts_apart(edition: str) -> None:
    """A stall that must trip a timeout stays 0.5 s above the drawn one, a pause meant to be waited for at least
    0.2 s below it; each drawn timeout lies on the other side of the public one from where a fitted gateway's
    constant would pass: first_byte_s above (the in-time first byte between the two), connect_s, total_s
    below, the probe's interval above."""
    v, rubric = _variants(), RUBRIC.for_edition(edition)
    public = rubric.gateway
    for seed in SEEDS:
        plan = v.gateway_plan(public, 1, seed)
        first_byte, total = plan.first_byte_s, plan.total_s
        assert first_byte > public.first_byte_s and total < public.total_s and plan.connect_s < public.connect_s
        assert plan.health_interval_s > public.health_interval_s / 0.6  # the public period is too frequent there
        checked = 0
        for case in plan.cases:
            for fault in case.local_faults:
                if fault["kind"] in ("stall_before_headers", "stall_after_headers"):
                    if case.criteria:  # the extra, in-time case
                        assert public.first_byte_s < fault["seconds"] <= first_byte - 0.25 + 1e-9, (seed, case)
                    else:
                        assert fault["seconds"] >= first_byte + 0.5 - 1e-9, (seed, case)
                    checked += 1
                elif fault["kind"] == "stall":  # a pause after the first event: total_s's
                    pause = fault["seconds"]
                    assert pause >= total + 0.5 - 1e-9 or first_byte < pause <= total - 0.2 + 1e-9, (seed, case)
                    checked += 1
            original = next((c for c in public.cases if c.name == case.name), None)
            drawn = v.gateway_cases.get(case.name, {})
            for i, (fault, before) in enumerate(zip(case.local_faults, original.local_faults if original else ())):
                if f"local_faults.{i}.status" in drawn and fault["kind"] == "http_error":  # another of its family
                    assert fault["status"] // 100 == before["status"] // 100 and fault["status"] != before["status"]
                    checked += 1
        # the extra in-time case, a stall before the headers, the pause within and the pause past total_s, and
        # the drawn statuses of local-500, local-400 and rl-500: a plan that lost one is no longer checked
        assert checked >= 7, (seed, checked)


def test_a_variant_judges_a_criterion_on_the_cases_it_ran_and_the_extra_cases_that_name_it() -> None:
    plan = _variants().gateway_plan(RUBRIC.gateway, 1, 0)
    timeout = gateway_criterion(RUBRIC.criterion("gateway.fallback-timeout"), plan)
    assert timeout is not None
    assert timeout.cases == ("local-stall-before-headers", "connect-timeout", "local-first-byte-in-time")
    assert gateway_criterion(RUBRIC.criterion("gateway.all-failed"), plan) is None  # none of its cases varied
    assert gateway_criterion(RUBRIC.criterion("gateway.headers"), plan) == RUBRIC.criterion("gateway.headers")


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (
            lambda d: d["loadgen"]["cut"].update({"server.faults.0.after_token": [1, 2]}),
            "loadgen.cut.server.faults.0.after_token: no such setting in the public one",
        ),
        (
            lambda d: d["loadgen"].update({"no-such": {"server.token_rate": [1, 2]}}),
            "loadgen.no-such: no such scenario",
        ),
        (
            lambda d: d["loadgen"]["cut"].update({"server.faults.0.after_tokens": [5, 1]}),
            "loadgen.cut.server.faults.0.after_tokens: a range is [lo, hi] with lo <= hi",
        ),
        (
            lambda d: d["gateway"]["cases"].update({"rl-refused": {}}),
            "gateway.cases.rl-refused: a case that stops the local",
        ),
        (
            lambda d: d["gateway"]["extra_cases"][0].update({"criteria": ["gateway.nope"]}),
            "gateway.extra_cases[0].criteria: name the criteria",
        ),
        (lambda d: d.update({"count": 0}), "count: the number of variants"),
        (lambda d: d["tests"].update({"percentile_methods": 99}), "tests.percentile_methods: 99 asked"),
        (lambda d: d["tests"].update({"server_draw": "yes"}), "tests.server_draw: true or false"),
    ],
)
def test_a_wrong_variants_file_is_refused_naming_the_field(
    tmp_path: Path, change: Callable[[dict[str, Any]], object], message: str
) -> None:
    data = yaml.safe_load(VARIANTS_FILE.read_text(encoding="utf-8"))
    change(data)
    path = tmp_path / "variants.yaml"
    path.write_text(yaml.safe_dump(data), encoding="utf-8")
    with pytest.raises(VariantsError, match="variants.yaml") as caught:
        load_variants(RUBRIC, path)
    assert message in str(caught.value)


def test_the_self_check_runs_no_hidden_material_and_the_grade_runs_it_all(tmp_path: Path) -> None:
    check = unseen_material(GradeRequest(tmp_path, tmp_path / "out", public_only=True), RUBRIC)
    assert check.missing == ""
    assert check.variants is None and check.sizing.unseen == ()
    assert set(check.sizing.sets) == set(RUBRIC.sizing.sets)
    grade = unseen_material(GradeRequest(tmp_path, tmp_path / "out"), RUBRIC)
    assert grade.missing == ""
    assert grade.variants is not None and len(grade.sizing.unseen) >= 4
    assert set(RUBRIC.sizing.sets) < set(grade.sizing.sets)


@pytest.mark.parametrize("edition", EDITIONS)
def test_every_draw_stays_in_the_domain_the_brief_publishes_and_the_brief_shows_them(edition: str) -> None:
    from grader.kit.generated import stale_parts
    from grader.rubric.domains import load_domains, outside, outside_drawn
    from grader.shared.yaml_files import read_yaml

    assert outside(load_domains(), read_yaml(VARIANTS_FILE)) == []
    rubric = RUBRIC.for_edition(edition)
    assert outside_drawn(load_domains(), _every_value_drawn(_variants(), range(200), rubric)) == []
    assert stale_parts() == [], "run: python -m grader.kit.generated --write"


def _every_value_drawn(v: Variants, seeds: Iterable[int], rubric: Rubric) -> Iterator[tuple[str, str, Any]]:
    """(where, path, value) of every setting each seed's variants drew, as the variants file names them."""
    for seed in seeds:
        for name, draws in v.loadgen.items():
            drawn = v.scenario(rubric.scenarios[name], 1, seed).to_dict()
            for path in draws:
                yield f"loadgen.{name}", path, get_path(drawn, path)
        plan = v.gateway_plan(rubric.gateway, 1, seed)
        for path in v.gateway_config:
            yield "gateway.config", path, get_path(plan.config, path)
        for path in v.gateway_servers:
            yield "gateway.servers", path, get_path({"local": plan.local_server, "api": plan.api_server}, path)
        cases = {c.name: c.to_dict() for c in plan.cases}
        for case, draws in v.gateway_cases.items():
            for path in draws:
                yield f"gateway.cases.{case}", path, get_path(cases[case], path)
        for i, extra in enumerate(v.extra_cases):
            for path in extra.draw:
                yield f"gateway.extra_cases[{i}]", path, get_path(cases[extra.case.name], path)


def test_a_draw_outside_its_domain_or_with_none_is_named() -> None:
    from grader.rubric.domains import load_domains, outside
    from grader.shared.yaml_files import read_yaml

    data = read_yaml(VARIANTS_FILE)
    data["gateway"]["config"]["local.timeouts.first_byte_s"] = [0.9, 3.0]  # the brief says at most 2 s
    data["loadgen"]["baseline"]["server.jitter"] = [0.0, 0.1]  # a dimension the brief never names
    found = outside(load_domains(), data)
    assert found == [
        "loadgen.baseline.server.jitter: no published dimension covers this draw (grader/rubric/domains.yaml)",
        "gateway.config.local.timeouts.first_byte_s: 3.0 is outside the published domain of first-byte timeout",
    ]
