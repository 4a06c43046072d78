"""Each skeleton's command line is the one the brief's flag table states: no flag missing, none extra, each
required or optional as the brief says, integers read as integers, repeatable flags repeatable, defaults equal.

A candidate starts from the skeletons; a skeleton that disagrees with TASK.md (a load generator without
`--timeout-s`, a sizing command that reads an integer flag as a decimal) hands them a contradiction.
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass
from pathlib import Path

import pytest
from kit_paths import ROOT

STARTER = ROOT / "starter"
BRIEF = (STARTER / "TASK.md").read_text(encoding="utf-8")


@dataclass(frozen=True)
class Flag:
    name: str
    required: bool
    integer: bool | None  # None: the brief or the skeleton does not say
    repeatable: bool = False
    default: str | None = None


def skeleton_flags(path: Path) -> dict[str, Flag]:
    """The `add_argument` calls of a skeleton, read from its source (it is never run here)."""
    flags = {}
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if not (isinstance(node, ast.Call) and getattr(node.func, "attr", "") == "add_argument" and node.args):
            continue
        name = ast.literal_eval(node.args[0])
        kw = {k.arg: k.value for k in node.keywords}
        typed = kw.get("type")
        helptext = ast.literal_eval(kw["help"]) if "help" in kw else ""
        required = ("required" in kw and ast.literal_eval(kw["required"])) or "REQUIRED" in helptext
        default = ast.literal_eval(kw["default"]) if "default" in kw else None
        flags[name] = Flag(
            name,
            bool(required),
            None if typed is None else getattr(typed, "id", "") == "int",
            "action" in kw and ast.literal_eval(kw["action"]) == "append",
            None if default is None else f"{default:g}" if isinstance(default, float) else str(default),
        )
    return flags


def sizing_table() -> dict[str, Flag]:
    """The sizing flags as the brief's table states them: `--flag VALUE   required|optional, default D; integer ...`."""
    block = BRIEF[BRIEF.index('<a id="siz-inputs">') :]
    block = block[block.index("```") + 3 :]
    block = block[: block.index("```")]
    flags = {}
    for line in block.splitlines():
        if not (m := re.match(r"^(--[a-z-]+) \S+\s+(.*)$", line)):
            continue
        text = m.group(2)
        default = re.search(r"default ([0-9.]+)", text)
        flags[m.group(1)] = Flag(
            m.group(1),
            text.startswith("required"),
            "integer" in text,
            "once or more" in text,
            default.group(1) if default else None,
        )
    return flags


def command_line(anchor: str, deliverable: str) -> dict[str, Flag]:
    """The flags a command is run with, from the brief's `deliverable.command` plus ... sentence: `[--x X]` optional."""
    start = BRIEF.index(f'<a id="{anchor}">')
    found = re.search(rf"`{deliverable}\.command` plus `([^`]*)`", BRIEF[start:])
    assert found, f"TASK.md, {anchor}: no `{deliverable}.command` plus `...` sentence"
    sentence = found.group(1)
    flags = {}
    for optional, name in re.findall(r"(\[?)(--[a-z-]+)", sentence):
        flags[name] = Flag(name, not optional, None)
    return flags


def test_the_sizing_skeleton_reads_every_flag_of_the_table_as_the_table_states_it():
    table, skeleton = sizing_table(), skeleton_flags(STARTER / "sizing" / "sizing.py")
    assert len(table) >= 20 and set(skeleton) == set(table)
    for name, stated in table.items():
        got = skeleton[name]
        assert got.required == stated.required, name
        assert bool(got.integer) == stated.integer, (
            f"{name}: the brief says {'an integer' if stated.integer else 'a number'}"
        )
        assert got.repeatable == stated.repeatable, name
        if stated.default is not None:
            assert got.default is not None and float(got.default) == float(stated.default), name


@pytest.mark.parametrize(
    ("anchor", "deliverable", "skeleton"),
    [
        ("lg-command", "loadgen", STARTER / "loadgen" / "loadgen.py"),
        ("gw-command", "gateway", STARTER / "gateway" / "gateway.py"),
    ],
)
def test_each_command_skeleton_takes_the_command_line_the_brief_states(anchor, deliverable, skeleton):
    stated, got = command_line(anchor, deliverable), skeleton_flags(skeleton)
    assert stated and set(got) == set(stated), f"{skeleton.name}: {sorted(set(got) ^ set(stated))}"
    for name, flag in stated.items():
        assert got[name].required == flag.required, name


def test_the_reading_of_the_table_can_tell_a_decimal_from_an_integer(tmp_path):
    """The check above can fail: a skeleton that reads --kv-bytes-per-token as a decimal is caught."""
    source = (STARTER / "sizing" / "sizing.py").read_text(encoding="utf-8")
    broken = source.replace('"--kv-bytes-per-token", type=int', '"--kv-bytes-per-token", type=float')
    assert broken != source
    (tmp_path / "sizing.py").write_text(broken, encoding="utf-8")
    assert skeleton_flags(tmp_path / "sizing.py")["--kv-bytes-per-token"].integer is False
    assert sizing_table()["--kv-bytes-per-token"].integer is True
