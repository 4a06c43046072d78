"""The candidate's manual of the fault plane and the pytest fixtures, rendered from the code that defines them.

`fake-server faults` prints every fault kind (engine/faults.py `KINDS`) with the rule fields it reads, each
field's default and help (`FaultRule`'s own); `fake-server fixture` prints the keywords the `fake_server`
fixture passes to `serve` (its own parameters and every settings field) and what the server it returns
offers. Nothing here is a second copy of that text, so a new kind, field or setting is documented when it
is written.
"""

from __future__ import annotations

import dataclasses
import inspect
import textwrap
from collections.abc import Callable, Iterable
from typing import Any

from fake_server.engine.faults import KINDS, SELECTION, FaultRule
from fake_server.hosting.handle import RunningServer
from fake_server.hosting.launch import serve, serve_fleet
from fake_server.settings import ModelSettings, ServerSettings

__all__ = ["SERVE_KEYWORDS", "fault_manual", "fixture_manual"]

_WIDTH = 108
#: What each named parameter of `serve` is for; the rest of its keywords are settings (their help is theirs).
#: tests/server/test_fake_server_manual.py fails when `serve` gains a parameter this does not describe.
SERVE_KEYWORDS = {
    "scenario": "a built-in scenario (`fake-server scenarios`) or a scenario YAML file; the keywords below override it",
    "settings": "a complete ServerSettings (e.g. from fake_server.build_settings) instead of any other keyword",
}
#: Keys a scenario (and so the fixture) takes beside the settings fields (fake_server.settings.apply_scenario).
_SCENARIO_KEYS = {
    "models": "{name: {setting: value, ...}}: more served models, each with its own engine and settings",
}


def _wrap(head: str, text: str, indent: int = 26, margin: int = 2) -> list[str]:
    """`head` at `margin`, then `text` wrapped beside it from column `indent` (below it when the head is long)."""
    lines = [" " * margin + head] if margin + len(head) >= indent - 1 else []
    first = " " * indent if lines else f"{' ' * margin}{head:<{indent - margin}}"
    body = textwrap.wrap(text, _WIDTH, initial_indent=first, subsequent_indent=" " * indent, break_on_hyphens=False)
    return lines + body if text else lines or [first.rstrip()]


def _default(f: dataclasses.Field[Any]) -> str:
    if f.default is dataclasses.MISSING:
        return "required"
    value = f.default
    shown = (
        "none" if value is None else "[]" if value == () else str(value).lower() if isinstance(value, bool) else value
    )
    return f"default {shown}"


def fault_manual() -> str:
    """Every fault kind, what a plain client sees, and the fields of its rule."""
    lines = [
        'Fault rules: in a scenario file (`faults:`), `PUT /admin/faults {"faults": [rule, ...]}` (replaces them),',
        "`POST /admin/faults rule` (adds one), `RunningServer.set_faults([rule, ...])` or `fake_server(faults=[...])`.",
        "Rules are tried in order; the first that selects a request acts on it, and the ledger records it as `fault`.",
        f"A kind that acts on requests selects them by {', '.join(SELECTION)} (the fields below).",
        "",
        "Kinds (`kind`), what a plain client sees, and the fields each reads:",
    ]
    for kind in KINDS:
        lines += _wrap(kind.name, kind.effect)
        reads = ", ".join(kind.params) if kind.params else "none"
        lines += _wrap(
            "",
            f"fields: {reads}"
            + ("" if kind.selects else f"; selects no request ({', '.join(SELECTION)} do not apply)"),
        )
    lines += ["", "Fields of a rule:"]
    for f in dataclasses.fields(FaultRule):
        lines += _wrap(f.name, f"{f.metadata.get('help', '')} ({_default(f)})")
    lines += [
        "",
        "Select with one of every, requests or rate (every: true when none is given), optionally with model.",
        'Example: {"kind": "cut", "after_tokens": 5, "requests": [2]} cuts the second request after 5 tokens.',
    ]
    return "\n".join(lines)


def _setting_line(f: dataclasses.Field[Any]) -> list[str]:
    kind = str(f.type).replace(" ", "")
    return _wrap(f"{f.name}: {kind}", f"{f.metadata.get('help', '')} ({_default_setting(f)})", 40, 4)


def _default_setting(f: dataclasses.Field[Any]) -> str:
    if f.default is not dataclasses.MISSING:
        return f"default {f.default!r}"
    if f.default_factory is not dataclasses.MISSING:
        return f"default {f.default_factory()!r}"
    return "required"


def _settings(fields: Iterable[dataclasses.Field[Any]]) -> list[str]:
    return [line for f in fields if f.name not in ("model", "extra_models") for line in _setting_line(f)]


def _signature(name: str, member: Callable[..., Any]) -> str:
    signature = inspect.signature(member)
    params = [p for p in signature.parameters.values() if p.name != "self"]
    return name + str(signature.replace(parameters=params, return_annotation=inspect.Signature.empty)).replace("'", "")


def _methods() -> list[str]:
    out = []
    for name, member in inspect.getmembers(RunningServer):
        if name.startswith("_"):
            continue
        head = name if isinstance(member, property) else _signature(name, member)
        doc = inspect.getdoc(member) or ""
        out += _wrap(head, " ".join(doc.split("\n\n")[0].split()), 40)
    return out


def fixture_manual() -> str:
    """The `fake_server` fixture's keywords (and `fake_fleet`'s), and what the server it returns offers."""
    params = [p for p in inspect.signature(serve).parameters.values() if p.kind is not p.VAR_KEYWORD]
    fleet = next(iter(inspect.signature(serve_fleet).parameters))
    lines = [
        "The pytest plugin (registered when the kit is installed) gives a test two fixtures.",
        "",
        "fake_server(**keywords) -> RunningServer",
        "  A fake server in a background thread on a free loopback port (`port` 0 unless given), stopped when the",
        "  test ends; call it again for more servers. Its keywords are those of fake_server.serve:",
    ]
    for p in params:
        lines += _wrap(f"{p.name}=", SERVE_KEYWORDS.get(p.name, ""), 40, 4)
    for key, text in _SCENARIO_KEYS.items():
        lines += _wrap(f"{key}=", text, 40, 4)
    lines += [
        "  and every setting by its name, a flag of `fake-server serve` without `--` and with `_` for `-`:",
        "  the server's settings:",
        *_settings(dataclasses.fields(ServerSettings)),
        "  the model's settings (of the default model; `models=` for more):",
        *_settings(dataclasses.fields(ModelSettings)),
        "",
        f"fake_fleet({fleet}) -> {{name: RunningServer}}",
        "  Every server of a fleet file (or its mapping) on free ports, stopped when the test ends.",
        "",
        "A RunningServer offers:",
        *_methods(),
        "",
        "The fault rules of `faults=` and set_faults(): `fake-server faults`.",
    ]
    return "\n".join(lines)
