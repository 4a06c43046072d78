"""The candidate's texts as an edition has them: the brief, the fleet and the gateway config example.

    from grader.kit.edition_texts import edition_texts
    texts = edition_texts(kit_root, "spring-2027")   # {"starter/TASK.md": ..., "starter/fleet.yaml": ..., ...}

`grader bundle --edition NAME` writes these over the kit's own. The brief's memo scenario and rule sheet are its
generated parts (grader/kit/rule_sheet.py), written from the edition's rubric; the model the fleet, the README,
the chart's values and the gateway config example name, the API's prices, and the GPU prices of the memo's example
line are the edition's memo scenario's. For the default edition every text is
the kit's own, byte for byte (a test holds it).
"""

from __future__ import annotations

import re
from pathlib import Path

from grader.kit.generated import replace_part
from grader.kit.rule_sheet import render_memo_scenario, render_rule_sheet
from grader.rubric import load_rubric
from grader.rubric.editions import memo_scenario
from grader.shared.contracts import DEFAULT_EDITION

__all__ = ["EDITION_FILES", "edition_texts"]

#: The texts an edition rewrites, relative to the kit's root (and to the bundle's top).
EDITION_FILES = (
    "starter/TASK.md",
    "starter/fleet.yaml",
    "starter/README.md",
    "starter/manifests/values.yaml",
    "starter/memo/MEMO.md",
    "schemas/contract/examples/gateway-config.yaml",
)


def _number(value: float) -> str:
    return f"{float(value):g}" if not float(value).is_integer() else f"{float(value):.1f}"


def _sub(text: str, pattern: str, value: str, where: str) -> str:
    """`text` with every match of `pattern`'s one group replaced by `value`; at least one must match."""
    out, count = re.subn(pattern, lambda m: m.group(0).replace(m.group(1), value, 1), text, flags=re.MULTILINE)
    if not count:
        raise ValueError(f"{where}: no line matches {pattern!r}, which an edition rewrites")
    return out


def edition_texts(root: Path, name: str) -> dict[str, str]:
    """The texts of EDITION_FILES as edition `name` has them (the kit's own for the default edition)."""
    texts = {rel: (root / rel).read_text(encoding="utf-8") for rel in EDITION_FILES}
    if name == DEFAULT_EDITION:
        return texts
    scenario, default = memo_scenario(name), memo_scenario(DEFAULT_EDITION)
    brief = texts["starter/TASK.md"]
    brief = replace_part(brief, "memo-scenario", render_memo_scenario(name))
    brief = replace_part(brief, "rule-sheet", render_rule_sheet(load_rubric(edition=name)))
    texts["starter/TASK.md"] = brief
    fleet = texts["starter/fleet.yaml"]
    fleet = _sub(fleet, rf"served_model_name: \[({re.escape(default.served)})\]", scenario.served, "fleet.yaml")
    fleet = _sub(fleet, r"^\s*price_input: (\S+)", _number(scenario.api_input_usd_per_million), "fleet.yaml")
    fleet = _sub(fleet, r"^\s*price_output: (\S+)", _number(scenario.api_output_usd_per_million), "fleet.yaml")
    texts["starter/fleet.yaml"] = fleet
    example = texts["schemas/contract/examples/gateway-config.yaml"]
    where = "gateway-config.yaml"
    example = _sub(example, rf"^\s*model: ({re.escape(default.served)})$", scenario.served, where)
    example = _sub(example, r"input_per_million_usd: ([0-9.]+)", _number(scenario.api_input_usd_per_million), where)
    example = _sub(example, r"output_per_million_usd: ([0-9.]+)", _number(scenario.api_output_usd_per_million), where)
    texts["schemas/contract/examples/gateway-config.yaml"] = example
    served = re.escape(default.served)
    texts["starter/README.md"] = _sub(
        texts["starter/README.md"], rf"^# local-\w\s+local ({served})\b", scenario.served, "README.md"
    )
    values = texts["starter/manifests/values.yaml"]
    values = _sub(values, rf"^\s*source: ({re.escape(default.source)})\b", scenario.source, "values.yaml")
    values = _sub(values, rf"^\s*servedModelName: ({served})\b", scenario.served, "values.yaml")
    texts["starter/manifests/values.yaml"] = values
    low, high = scenario.gpu_hour_usd
    texts["starter/memo/MEMO.md"] = _sub(
        texts["starter/memo/MEMO.md"], r"gpu-hour-usd: (\[[0-9., ]+\])", f"[{low:g}, {high:g}]", "MEMO.md"
    )
    return texts
