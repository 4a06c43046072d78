"""Each skeleton's command line is the one the brief's flag table states: no flag missing, none extra, each
required or optional as the brief says, integers read as integers, repeatable flags repeatable, defaults equal.

A candidate starts from the skeletons; a skeleton that disagrees with TASK.md (a load generator without
`--timeout-s`, a sizing command that reads an integer flag as a decimal) hands them a contradiction.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from kit_paths import ROOT

from grader.kit.flags import Flag, skeleton_flags

STARTER = ROOT / "starter"
BRIEF = (STARTER / "TASK.md").read_text(encoding="utf-8")


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


def test_the_sizing_skeleton_reads_every_flag_of_the_table_as_the_table_states_it() -> None:
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
def test_each_command_skeleton_takes_the_command_line_the_brief_states(
    anchor: str, deliverable: str, skeleton: Path
) -> None:
    stated, got = command_line(anchor, deliverable), skeleton_flags(skeleton)
    assert stated and set(got) == set(stated), f"{skeleton.name}: {sorted(set(got) ^ set(stated))}"
    for name, flag in stated.items():
        assert got[name].required == flag.required, name


def test_the_reading_of_the_table_can_tell_a_decimal_from_an_integer(tmp_path: Path) -> None:
    """The check above can fail: a skeleton that reads --kv-bytes-per-token as a decimal is caught."""
    source = (STARTER / "sizing" / "sizing.py").read_text(encoding="utf-8")
    broken = source.replace('"--kv-bytes-per-token", type=int', '"--kv-bytes-per-token", type=float')
    assert broken != source
    (tmp_path / "sizing.py").write_text(broken, encoding="utf-8")
    assert skeleton_flags(tmp_path / "sizing.py")["--kv-bytes-per-token"].integer is False
    assert sizing_table()["--kv-bytes-per-token"].integer is True


def test_a_false_flag_default_planted_in_the_contract_doc_fails_the_generated_check() -> None:
    """docs/contract.md's flag table is written from the skeletons: a default changed by hand there is stale."""
    from grader.kit.flags import render_flags
    from grader.kit.generated import is_current

    text = (ROOT / "docs" / "contract.md").read_text(encoding="utf-8")
    assert is_current(text, "flags", render_flags)
    for true, planted in (("| default 600 |", "| default 60 |"), ("| `--api-key` | text", "| `--api-key` | integer")):
        assert true in text
        assert not is_current(text.replace(true, planted), "flags", render_flags), planted
