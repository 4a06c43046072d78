"""Fleet files: several fake servers, each with its own persona, settings, faults and ledger.

    servers:
      local-a:                 # a name of your choosing
        port: 8001
        scenario: baseline     # optional: a built-in scenario or file as the base
        served_model_name: [qwen3-8b]
      local-b:
        port: 8002
        served_model_name: [qwen3-8b]
        faults: [{kind: http_error, status: 503, rate: 0.2}]
      api:
        port: 8100
        persona: api
        api_key: sk-test

Every key other than `scenario` is a setting, as in a scenario file.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from fake_server.scenarios import build_settings
from fake_server.settings import ServerSettings, SettingsError, read_scenario_file

__all__ = ["fleet_settings"]


def fleet_settings(fleet: str | Path | dict[str, Any]) -> dict[str, ServerSettings]:
    """Settings of every server of a fleet, by name, in file order; errors name the server."""
    where = "fleet"
    if isinstance(fleet, dict):
        data = fleet
    else:
        where = str(fleet)
        data = read_scenario_file(Path(fleet))
    unknown = set(data) - {"servers", "description"}
    if unknown:
        raise SettingsError(f"{where}: unknown key(s) {', '.join(sorted(map(str, unknown)))} (expected `servers`)")
    servers = data.get("servers")
    if not isinstance(servers, dict) or not servers:
        raise SettingsError(f"{where}: `servers` must map server names to their settings")
    out: dict[str, ServerSettings] = {}
    ports: dict[int, str] = {}
    for name, values in servers.items():
        values = dict(values or {})
        scenario = values.pop("scenario", None)
        try:
            settings = build_settings(scenario, **values)
        except SettingsError as exc:
            raise SettingsError(f"{where}: servers.{name}: {exc}") from None
        if settings.port and settings.port in ports:
            raise SettingsError(
                f"{where}: servers.{name}: port {settings.port} is already used by `{ports[settings.port]}`"
            )
        ports[settings.port] = str(name)
        out[str(name)] = settings
    return out
