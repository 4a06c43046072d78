"""Each rule is written once: the brief (starter/TASK.md) states it, and every other text of the kit points
there instead of restating it, so two texts can never say two things; where a text must still say something
the brief says, a test holds the two together."""

from __future__ import annotations

import json

import jsonschema
import yaml
from kit_paths import ROOT

TASK = (ROOT / "starter" / "TASK.md").read_text(encoding="utf-8")
CONTRACT = (ROOT / "schemas" / "contract" / "README.md").read_text(encoding="utf-8")


def test_the_contract_readme_points_to_the_brief_for_every_rule_it_once_restated() -> None:
    for restated in (
        "--gpu-hour-usd PRICE",
        "`first_byte_s` bounds",
        "when `/tokenize` answers an error",
        "Definitions: TTFT =",
        "Honesty rules the grader checks",
        "Flags (all required",
    ):
        assert restated not in CONTRACT, restated
    assert CONTRACT.count("starter/TASK.md") >= 5
    assert "--gpu-hour-usd PRICE" in TASK  # the one table of the sizing flags


def test_what_is_on_the_candidates_pythonpath_is_said_the_same_everywhere() -> None:
    contract_doc = (ROOT / "docs" / "contract.md").read_text(encoding="utf-8")
    assert "the grader puts only that module on `PYTHONPATH`" in TASK
    assert "that one module, `api_client.py`, not the starter's folders" in contract_doc
    assert "`starter/` on `PYTHONPATH`" not in contract_doc
    sandbox = (ROOT / "grader" / "sandbox" / "jobs.py").read_text(encoding="utf-8")
    assert '(folder / "api_client.py").write_text' in sandbox  # what the sandbox really does


def test_the_memo_skeletons_example_figures_follow_the_schema_once_uncommented() -> None:
    text = (ROOT / "starter" / "memo" / "MEMO.md").read_text(encoding="utf-8")
    front = text.split("---\n")[1]
    lines = [line.replace("  # ", "  ", 1) if line.startswith("  # ") else line for line in front.splitlines()]
    figures = yaml.safe_load("\n".join(lines))["figures"]
    assert isinstance(figures, list) and len(figures) >= 3  # the live figure and both examples
    schema = json.loads((ROOT / "schemas" / "contract" / "memo-front-matter.schema.json").read_text())
    data = {"contract": 1, "figures": figures}
    jsonschema.validate(data, schema)


def test_the_stub_client_and_the_brief_say_the_same_of_first_byte_s() -> None:
    stub = " ".join((ROOT / "starter" / "api_client.py").read_text(encoding="utf-8").split())
    brief = " ".join(TASK.split())
    assert "every gap" not in stub and "every gap" not in brief
    assert "after a stream's first event only `total` does: a pause between events is no timeout" in stub
    assert "after a stream's first event only `total_s` does: a pause between events is no failure" in brief
