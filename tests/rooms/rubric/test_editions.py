"""Editions: each cohort's numbers drawn from its name, every one differing from the default's, inside the domains
the brief publishes, written into the brief the same way the grade uses them, and stable over time."""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml
from kit_paths import ROOT

from grader.grading.edition_fit import fitted_edition
from grader.kit.edition_texts import edition_texts
from grader.rubric import RubricError, load_rubric
from grader.rubric.domains import load_domains, outside_drawn
from grader.rubric.draws import get_path
from grader.rubric.editions import EDITIONS_FILE, EditionError, check_name, memo_scenario, with_edition
from grader.shared.yaml_files import read_yaml

RUBRIC = load_rubric()
NAMES = [f"cohort-{i}" for i in range(40)] + ["spring-2027", "autumn-2027"]
DEFAULT = memo_scenario("default")
#: Every number of the memo's scenario an edition draws (the issue of a cohort: what a memo could carry over).
MEMO_FIELDS = (
    "weights_gb",
    "kv_bytes_per_token",
    "gpu_memory_gb",
    "chats_per_day",
    "turns_per_chat",
    "input_tokens_per_turn",
    "output_tokens_per_turn",
    "active_hours",
    "peak_factor",
    "api_input_usd_per_million",
    "api_output_usd_per_million",
)


def test_the_default_edition_is_the_rubric_as_it_stands() -> None:
    raw = read_yaml(ROOT / "grader" / "rubric" / "rubric.yaml")
    assert with_edition(raw, "default") == raw
    assert RUBRIC.for_edition("default") is RUBRIC
    assert all(text == (ROOT / rel).read_text(encoding="utf-8") for rel, text in edition_texts(ROOT, "default").items())


@pytest.mark.parametrize("name", NAMES)
def test_every_number_of_an_edition_differs_from_the_defaults_and_fits(name: str) -> None:
    s = memo_scenario(name)
    perturb = read_yaml(ROOT / "grader" / "rubric" / "rubric.yaml")["sizing"]["perturb"]
    for field in MEMO_FIELDS:
        assert getattr(s, field) != getattr(DEFAULT, field), (name, field)
    assert set(s.gpu_hour_usd).isdisjoint(DEFAULT.gpu_hour_usd) and s.gpu_hour_usd[0] < s.gpu_hour_usd[1]
    for flag, value in s.sizing_flags().items():  # the sizing check moves each input to a value no set has
        assert value != perturb.get(flag), (name, flag)
    assert s.weights_gb + 5 <= 0.9 * s.gpu_memory_gb, f"{s.model} does not fit on {s.gpu}"
    rubric = RUBRIC.for_edition(name)
    for path in read_yaml(EDITIONS_FILE)["gateway"]["config"]:  # every published config number it draws
        assert get_path(rubric.gateway.config, path) != get_path(RUBRIC.gateway.config, path), (name, path)
    assert rubric.gateway.max_model_len != RUBRIC.gateway.max_model_len
    assert rubric.scenarios["timeout"].loadgen["timeout_s"] != RUBRIC.scenarios["timeout"].loadgen["timeout_s"]


@pytest.mark.parametrize("name", NAMES[:8])
def test_an_editions_published_numbers_stay_in_the_brief_domains(name: str) -> None:
    """What an edition publishes lies inside the domain the brief gives each dimension (so its unseen variants,
    drawn around it, can too: tests/rooms/rubric/test_variants.py holds those)."""
    rubric = RUBRIC.for_edition(name)
    spec = read_yaml(EDITIONS_FILE)
    values = [
        (f"loadgen.{scenario}", path, get_path(rubric.scenarios[scenario].to_dict(), path))
        for scenario, draws in spec["scenarios"].items()
        for path in draws
    ]
    values += [("gateway.config", p, get_path(rubric.gateway.config, p)) for p in spec["gateway"]["config"]]
    servers = {"local": rubric.gateway.local_server, "api": rubric.gateway.api_server}
    values += [("gateway.servers", p, get_path(servers, p)) for p in spec["gateway"]["servers"]]
    cases = {c.name: c.to_dict() for c in rubric.gateway.cases}
    values += [
        (f"gateway.cases.{case}", p, get_path(cases[case], p))
        for case, draws in spec["gateway"]["cases"].items()
        for p in draws
    ]
    assert outside_drawn(load_domains(), values) == []


def test_an_editions_texts_say_what_its_runs_do() -> None:
    """A stall's text states the stall the case runs, and the timeout it trips; a scenario's description its settings."""
    rubric = RUBRIC.for_edition("spring-2027")
    case = next(c for c in rubric.gateway.cases if c.name == "local-stall-before-headers")
    stall, first_byte = case.local_faults[0]["seconds"], rubric.gateway.first_byte_s
    assert stall == pytest.approx(first_byte + 1.0)
    assert case.what == f"the local route sends nothing for {stall:g} s (first_byte_s {first_byte:g})"
    timeout = rubric.scenarios["timeout"]
    assert f"past --timeout-s {timeout.loadgen['timeout_s']:g}" in timeout.description
    assert f"for {timeout.server['faults'][0]['seconds']:g} s" in timeout.description
    words = next(c for c in rubric.gateway.cases if c.name == "rl-too-long").send.words
    assert words == rubric.gateway.max_model_len + 40


def _shown(value: float) -> set[str]:
    """The ways the brief may write a number: 2000 as 2,000, 2.5 as 2.5, 4.0 as 4."""
    return {f"{value:,.0f}" if float(value).is_integer() else f"{value:,.2f}".rstrip("0").rstrip("."), f"{value:g}"}


def _memo_scenario_part(text: str) -> str:
    """The memo's scenario, between its markers in TASK.md."""
    found = re.search(r"<!-- memo-scenario: begin -->(.*?)<!-- memo-scenario: end -->", text, re.DOTALL)
    assert found is not None, "TASK.md marks no memo scenario"
    return found.group(1)


def test_two_editions_briefs_differ_in_every_number_a_solution_could_carry() -> None:
    """Every number of the memo's scenario, and the published gateway config, as TASK.md states them."""
    texts = {name: edition_texts(ROOT, name)["starter/TASK.md"] for name in ("default", "spring-2027")}
    part = {n: _memo_scenario_part(t) for n, t in texts.items()}
    numbers = {n: {float(x.replace(",", "")) for x in re.findall(r"\d[\d,]*(?:\.\d+)?", m)} for n, m in part.items()}
    for name in ("default", "spring-2027"):
        s = memo_scenario(name)
        for field in (*MEMO_FIELDS, "context"):
            assert float(getattr(s, field)) in numbers[name], (name, field)
        assert set(s.gpu_hour_usd) <= numbers[name]
    for field in MEMO_FIELDS:
        assert float(getattr(memo_scenario("spring-2027"), field)) not in numbers["default"] or field in (
            "turns_per_chat",  # a small count may appear elsewhere in the paragraph (layers x 8 KV heads ...)
            "peak_factor",
        ), field
    sheets = {n: t.split("<!-- rule-sheet: begin -->")[1] for n, t in texts.items()}
    spec = read_yaml(EDITIONS_FILE)
    drawn = [f"config.{p}" for p in spec["gateway"]["config"]] + [
        "config.api.prices.input_per_million_usd",
        "config.api.prices.output_per_million_usd",
    ]
    values: dict[str, set[float]] = {}
    for name, sheet in sheets.items():
        rubric = RUBRIC.for_edition(name)
        lines = {line.split(":")[0]: line for line in sheet.splitlines() if line.startswith(("local: ", "api: "))}
        for path in drawn:
            value = get_path({"config": rubric.gateway.config}, path)
            route, key = path.split(".")[1], path.split(".")[-1]
            assert f"{key}: {value:g}" in lines[route], (name, path)
            values.setdefault(path, set()).add(value)
        assert f"`max_model_len`: {rubric.gateway.max_model_len}." in sheet
        timeout, baseline = rubric.scenarios["timeout"], rubric.scenarios["baseline"]
        assert f"--timeout-s {timeout.loadgen['timeout_s']}`" in sheet
        assert f"token_rate={baseline.server['token_rate']};" in sheet
        values.setdefault("timeout_s", set()).add(timeout.loadgen["timeout_s"])
        values.setdefault("token_rate", set()).add(baseline.server["token_rate"])
        values.setdefault("max_model_len", set()).add(rubric.gateway.max_model_len)
    assert all(len(v) == 2 for v in values.values()), values  # each differs between the two editions


def test_an_editions_numbers_are_the_ones_its_bundle_was_issued_with() -> None:
    """A cohort's grade weeks after its bundle: the same name draws the same numbers. The recording was made when
    the edition was first drawn; a change to editions.yaml or to the draws that moves an issued edition fails here
    (add the new draws under new names instead, or keep the old)."""
    recorded = json.loads((ROOT / "tests/fixtures/editions/spring-2027.json").read_text())
    rubric = RUBRIC.for_edition("spring-2027")
    now = {
        "memo": memo_scenario("spring-2027").to_dict(),
        "gateway_config": rubric.gateway.config,
        "max_model_len": rubric.gateway.max_model_len,
        "baseline": rubric.scenarios["baseline"].server,
        "timeout": rubric.scenarios["timeout"].to_dict(),
    }
    assert json.loads(json.dumps(now)) == recorded


@pytest.mark.parametrize("name", ["", "Spring", "spring 2027", "a" * 41, "-x", "spring_2027"])
def test_a_name_that_is_no_edition_is_refused_saying_what_a_name_is(name: str) -> None:
    with pytest.raises(EditionError, match="a name is 1 to 40 lower-case letters"):
        check_name(name)
    with pytest.raises(RubricError, match="a name is 1 to 40"):
        RUBRIC.for_edition(name)


def _broken(edit: Callable[[dict[str, Any]], object]) -> dict[str, Any]:
    spec: dict[str, Any] = yaml.safe_load(EDITIONS_FILE.read_text())
    edit(spec)
    return spec


@pytest.mark.parametrize(
    ("spec", "said"),
    [
        (
            _broken(lambda s: s["gateway"]["cases"].update({"no-such-case": {"send.words": [1, 2]}})),
            "gateway.cases.no-such-case: the rubric has no such case",
        ),
        (_broken(lambda s: s["memo"]["numbers"]["chats_per_day"].pop("step")), "memo.numbers.chats_per_day: {range"),
        (_broken(lambda s: s["memo"]["default"].update(model="Qwen9")), "memo.default.model: 'Qwen9' is none of"),
        (_broken(lambda s: s["memo"]["models"][1].pop("layers")), r"memo.models\[1\]: needs"),
    ],
    ids=["case", "step", "model", "layers"],
)
def test_an_editions_file_that_cannot_draw_is_refused_naming_the_field(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, spec: dict[str, Any], said: str
) -> None:
    from grader.rubric import editions

    bad = tmp_path / "editions.yaml"
    bad.write_text(yaml.safe_dump(spec))
    monkeypatch.setattr(editions, "EDITIONS_FILE", bad)
    editions._spec.cache_clear()
    editions.memo_scenario.cache_clear()
    try:
        with pytest.raises(RubricError, match=said):
            load_rubric(edition="cohort-99")
    finally:
        editions._spec.cache_clear()
        editions.memo_scenario.cache_clear()


def _memo_folder(tmp_path: Path, edition: str) -> Path:
    """A submission whose memo sized edition `edition`'s scenario (its sizing_inputs, its prose's prices)."""
    s = memo_scenario(edition)
    folder = tmp_path / edition
    (folder / "memo").mkdir(parents=True)
    inputs = {"throughput": 595, **s.sizing_flags()}
    low, high = s.gpu_hour_usd
    (folder / "memo" / "MEMO.md").write_text(
        f"---\nsizing_inputs: {json.dumps(inputs)}\n---\nAt ${low:.2f} and ${high:.2f} an hour, "
        f"{s.chats_per_day:,} chats a day cost little.\n"
    )
    return folder


def test_a_submission_made_for_one_edition_is_flagged_when_graded_as_another(tmp_path: Path) -> None:
    from grader.contract import memo_front_matter

    for made, graded in (("spring-2027", "default"), ("default", "spring-2027"), ("spring-2027", "autumn-2027")):
        folder = _memo_folder(tmp_path / graded, made)
        inputs = memo_front_matter(folder / "memo" / "MEMO.md")["sizing_inputs"]
        fit = fitted_edition(folder, issued=graded, known=("default", made), sizing_inputs=inputs)
        assert fit is not None and fit.edition == made and fit.issued == graded, (made, graded)
        assert fit.sentence.startswith(f"fits edition {made}; was issued {graded} (it carries ")
        assert fitted_edition(folder, issued=made, known=("default", graded), sizing_inputs=inputs) is None
    # the prose alone, with no front matter: the distinctive numbers still tell (prices, chats a day)
    folder = _memo_folder(tmp_path / "prose", "spring-2027")
    s = memo_scenario("spring-2027")
    (folder / "memo" / "MEMO.md").write_text(
        f"Prices ${s.gpu_hour_usd[0]:.2f} / ${s.gpu_hour_usd[1]:.2f}; {s.chats_per_day:,} chats; "
        f"{s.input_tokens_per_turn:,} in and {s.output_tokens_per_turn} out a turn.\n"
    )
    fit = fitted_edition(folder, issued="default", known=("default", "spring-2027"))
    assert fit is not None and fit.edition == "spring-2027"
