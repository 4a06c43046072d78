"""Built-in scenarios: named YAML files under `fake_server/scenarios/`, one per edge case."""

from __future__ import annotations

from pathlib import Path

import yaml

from .settings import SettingsError

__all__ = ["SCENARIO_DIR", "list_scenarios", "scenario_path"]

SCENARIO_DIR = Path(__file__).parent / "scenarios"


def list_scenarios() -> list[tuple[str, str]]:
    """(name, description) of every built-in scenario, sorted by name."""
    out = []
    for path in sorted(SCENARIO_DIR.glob("*.yaml")):
        data = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
        out.append((path.stem, str(data.get("description", ""))))
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
