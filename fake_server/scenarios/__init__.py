"""Built-in scenarios (named YAML files under `fake_server/scenarios/`, one per edge case), and
settings built from a scenario and keyword overrides."""

from __future__ import annotations

from importlib import resources
from pathlib import Path
from typing import Any

import yaml

from fake_server.engine.faults import parse_rules
from fake_server.http.api_persona import API_DEFAULTS
from fake_server.settings import ServerSettings, SettingsError, apply_scenario, describe, read_scenario_file

__all__ = ["SCENARIO_DIR", "build_settings", "list_scenarios", "scenario_path"]

# Package data, found the way an installed wheel and a checkout both provide it.
SCENARIO_DIR = Path(str(resources.files("fake_server") / "scenarios"))


def list_scenarios() -> list[tuple[str, str]]:
    """(name, description) of every built-in scenario, sorted by name."""
    out = []
    for path in sorted(SCENARIO_DIR.glob("*.yaml")):
        data = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
        out.append((path.stem, describe(data)))
    return out


def scenario_path(name_or_path: str) -> Path:
    """A built-in scenario's file, or the given path if it names a file."""
    builtin = SCENARIO_DIR / f"{name_or_path}.yaml"
    if builtin.is_file():
        return builtin
    path = Path(name_or_path)
    if path.is_file():
        return path
    names = ", ".join(name for name, _ in list_scenarios())
    raise SettingsError(f"scenario `{name_or_path}` is neither a built-in ({names}) nor a file")


def build_settings(scenario: str | Path | None = None, **overrides: Any) -> ServerSettings:
    """Settings from defaults, the persona's defaults, a scenario (built-in name or file), then
    keyword overrides, in that order. Keyword names are settings names; default-model settings
    and server settings may be mixed.
    """
    data: dict[str, Any] = {}
    where = "scenario"
    if scenario is not None:
        path = scenario_path(str(scenario))
        data, where = read_scenario_file(path), str(path)
    settings = ServerSettings()
    if overrides.get("persona", data.get("persona")) == "api":
        apply_scenario(API_DEFAULTS, settings, "API persona defaults")
    apply_scenario(data, settings, where)
    if "faults" in data:  # checked here too, so a bad rule names the file it came from
        parse_rules(settings.faults, f"{where}: faults")
    apply_scenario(overrides, settings, "overrides")
    settings.validate()
    return settings
