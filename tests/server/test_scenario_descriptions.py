"""A built-in scenario's description states the numbers its settings run, written from them (`{SETTING}`), so
`fake-server scenarios` cannot say 150 ms for a scenario that waits 300."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import yaml

from fake_server.scenarios import SCENARIO_DIR, list_scenarios
from fake_server.settings import SettingsError, describe

PATHS = sorted(SCENARIO_DIR.glob("*.yaml"))


#: A number a description writes with one of these after it is a setting's, and must come from the setting.
_UNITS = r"(?:ms|s|tokens?|slots?|events?|reasoning deltas|tokens/s)\b"
#: What a description may quote that is no setting of its own: role-chunk-early compares with the grade's
#: role-chunk scenario (300 ms, drawn from 200 to 400 in its unseen variant); a split write's halves are always
#: 2 ms apart (fake_server/http/sse.py SPLIT_PAUSE, a constant).
QUOTED = {"role-chunk-early": {"300", "200", "400"}, "sse-split-coalesced": {"2"}}


@pytest.mark.parametrize("path", PATHS, ids=[p.stem for p in PATHS])
def test_no_setting_is_written_into_a_description_by_hand(path: Path) -> None:
    data = yaml.safe_load(path.read_text())
    template = re.sub(r"\{[^}]*\}", "{}", str(data.get("description", "")))
    by_hand = set(re.findall(r"(\d[\d,.]*)\s*" + _UNITS, template)) - QUOTED.get(path.stem, set())
    assert not by_hand, f"{path.name}: {sorted(by_hand)} written by hand; write {{SETTING}} instead"


def test_a_description_follows_its_settings() -> None:
    data = yaml.safe_load((SCENARIO_DIR / "stall-before-headers.yaml").read_text())
    assert describe(data).startswith("Nothing at all for 2 s,")
    data["faults"][0]["seconds"] = 4.5
    assert describe(data).startswith("Nothing at all for 4.5 s,")
    assert dict(list_scenarios())["role-chunk-early"].startswith(
        "The role-only first chunk goes out at scheduling, 150 ms before the first token"
    )
    with pytest.raises(SettingsError, match="names no setting of the scenario"):
        describe({"description": "after {faults.0.after_tokens} tokens"})
