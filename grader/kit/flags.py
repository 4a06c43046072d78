"""Each command's flags as the starter's skeletons take them: the table docs/contract.md shows is written from them.

The skeletons' command lines are held to the brief's flag table by tests/kit/test_skeleton_flags.py; reading them
here (statically, never running them) makes the contract's table a copy of something already checked, so a flag
or a default written into the docs by hand fails `python -m grader.kit.generated`.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass
from pathlib import Path

from grader.shared.kit_files import kit_dir

__all__ = ["COMMANDS", "Flag", "render_flags", "skeleton_flags"]

#: The commands the grader runs with flags, and the skeleton whose command line is the brief's.
COMMANDS = (
    ("loadgen.command", Path("loadgen") / "loadgen.py"),
    ("gateway.command", Path("gateway") / "gateway.py"),
    ("sizing.command", Path("sizing") / "sizing.py"),
)


@dataclass(frozen=True)
class Flag:
    name: str
    required: bool
    integer: bool | None  # None: the skeleton does not say
    repeatable: bool = False
    default: str | None = None
    choices: tuple[str, ...] = ()


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
            tuple(ast.literal_eval(kw["choices"])) if "choices" in kw else (),
        )
    return flags


def _kind(flag: Flag) -> str:
    if flag.choices:
        return " \\| ".join(flag.choices)
    return {True: "integer", False: "number", None: "text"}[flag.integer]


def render_flags(starter: Path | None = None) -> str:
    """One table of every command's flags: required or the default it has, its kind, and whether it repeats."""
    starter = starter or kit_dir("starter")
    lines = ["| command | flag | value | required, or its default |", "| --- | --- | --- | --- |"]
    for command, skeleton in COMMANDS:
        for flag in skeleton_flags(starter / skeleton).values():
            given = (
                "required" if flag.required else f"default {flag.default}" if flag.default else "optional, no default"
            )
            repeats = "; once or more" if flag.repeatable else ""
            lines.append(f"| `{command}` | `{flag.name}` | {_kind(flag)} | {given}{repeats} |")
    return "\n".join(lines)
