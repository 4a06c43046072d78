"""The docs list what the code has: every module of the grader is named in grader/README.md, every room of
docs/architecture.md is the layering test's, every command of both CLIs is in the README or the docs, and
every generated list (the chaff table, the rooms, the brief's domains) is current."""

from __future__ import annotations

import click
from kit_paths import ROOT

from fake_server.cli import main as fake_server_cli
from grader.cli import main as grader_cli
from grader.kit.generated import stale_parts


def test_every_module_of_the_grader_is_named_in_its_readme() -> None:
    readme = (ROOT / "grader" / "README.md").read_text(encoding="utf-8")
    missing = []
    for path in sorted((ROOT / "grader").rglob("*.py")):
        rel = path.relative_to(ROOT / "grader")
        if path.name in ("__init__.py", "__main__.py") or "__pycache__" in rel.parts:
            continue
        # a room with a README of its own (sandbox/) names its modules there
        room_readme = ROOT / "grader" / rel.parts[0] / "README.md"
        text = readme + (room_readme.read_text(encoding="utf-8") if len(rel.parts) > 1 and room_readme.exists() else "")
        # a module is named by its path, by its name in its room's own row (`checks.py` in `criteria/`'s),
        # or by its folder when that folder is one module per item (`manifests/checks/`)
        named = (
            rel.as_posix() in text
            or (len(rel.parts) > 1 and f"`{rel.name}`" in text)
            or (len(rel.parts) > 2 and f"`{rel.parent.as_posix()}/`" in text)
        )
        if not named:
            missing.append(rel.as_posix())
    assert missing == [], "grader/README.md names no such module: add it to its table"


def test_every_command_is_in_the_readme_or_the_docs() -> None:
    text = (ROOT / "README.md").read_text(encoding="utf-8") + "".join(
        p.read_text(encoding="utf-8") for p in (ROOT / "docs").glob("*.md")
    )
    for prog, group in (("grader", grader_cli), ("fake-server", fake_server_cli)):
        assert isinstance(group, click.Group)
        missing = [name for name in group.commands if f"{prog} {name}" not in text]
        assert missing == [], f"{prog}: commands the README and docs never show"


def test_the_generated_lists_are_current() -> None:
    assert stale_parts() == [], "run: python -m grader.kit.generated --write"
