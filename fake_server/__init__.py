"""A settable fake OpenAI-compatible server that behaves like vLLM, with a ground-truth ledger.

The public surface (everything else is internal and may change):

    serve(...)             run a server in a background thread (context manager)
    serve_subprocess(...)  run `fake-server serve` as a child process (context manager)
    serve_fleet(...)       run every server of a fleet file on one background loop
    RunningServer          what both yield: base_url, ledger(), configure(), set_faults(), ...
    build_settings(...)    settings from a scenario name/file and keyword overrides
    ServerSettings, ModelSettings, SettingsError
    tokenizer              the documented tokenizer (`tokenizer.count(text)`)
    list_scenarios()       the built-in scenarios

The pytest plugin (`fake_server.pytest_plugin`, registered automatically) gives tests the
`fake_server` fixture.
"""

from fake_server import tokenizer
from fake_server.hosting.launch import RunningServer, build_settings, serve, serve_fleet, serve_subprocess
from fake_server.scenarios import list_scenarios
from fake_server.settings import ModelSettings, ServerSettings, SettingsError, fill_settings

__all__ = [
    "ModelSettings",
    "RunningServer",
    "ServerSettings",
    "SettingsError",
    "build_settings",
    "fill_settings",
    "list_scenarios",
    "serve",
    "serve_fleet",
    "serve_subprocess",
    "tokenizer",
]
