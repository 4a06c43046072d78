"""The docs list what the code has: every module of the grader is named in grader/README.md, every room of
docs/architecture.md is the layering test's, every command of both CLIs is in the README or the docs, and
every generated list (the chaff table, the rooms, the brief's domains) is current."""

from __future__ import annotations

import json
import re
from pathlib import Path

import click
import yaml
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


def _private_fake_server_imports(bench: Path) -> dict[str, set[str]]:
    """Each bench file's imports of the fake server's inside (anything but `fake_server` and `fake_server.cli`)."""
    import ast

    out: dict[str, set[str]] = {}
    for path in sorted(bench.glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            module = node.module if isinstance(node, ast.ImportFrom) else None
            if module and module.startswith("fake_server.") and module != "fake_server.cli":
                out.setdefault(path.name, set()).add(module)
    return out


def test_the_bench_readme_names_every_bench_that_reaches_inside_the_fake_server_and_what_it_imports() -> None:
    """The whole statement "Imports: the public API, plus M in F": each file and each module it names, no more."""
    readme = (ROOT / "bench" / "README.md").read_text(encoding="utf-8")
    statement = " ".join(readme[readme.index("Imports:") : readme.index("\n\n", readme.index("Imports:"))].split())
    found = _private_fake_server_imports(ROOT / "bench")
    assert found, "no bench reaches inside the fake server: drop the exceptions from the statement"
    for name, modules in found.items():
        assert f"`{name}`" in statement, f"bench/README.md's Imports: does not name {name}"
        for module in modules:
            assert module in statement, f"bench/README.md's Imports: does not say {name} imports {module}"
    named = set(re.findall(r"`([a-z_]+\.py)`", statement))
    assert named <= set(found), f"named as reaching inside, and does not: {sorted(named - set(found))}"


def test_the_recipes_name_only_keys_their_files_take() -> None:
    """Each "`KEY:` in `grader/rubric/rubric.yaml`" or "in `grader/unseen/variants.yaml`" of docs/recipes.md is a key the
    file's schema (or the file) has."""
    text = " ".join((ROOT / "docs" / "recipes.md").read_text(encoding="utf-8").split())
    schema = json.loads((ROOT / "schemas" / "grader" / "rubric.schema.json").read_text(encoding="utf-8"))
    variants = yaml.safe_load((ROOT / "grader" / "unseen" / "variants.yaml").read_text(encoding="utf-8"))
    takes = {"grader/rubric/rubric.yaml": set(schema["properties"]), "grader/unseen/variants.yaml": set(variants)}
    claims = re.findall(r"`([a-z_]+):` in `(grader/rubric\.yaml|grader/unseen/variants\.yaml)`", text)
    assert claims, "the recipes name no key of the rubric or the variants file"
    for key, file in claims:
        assert key in takes[file], f"docs/recipes.md: `{key}:` in `{file}`, which has no such key"


def test_grading_many_names_every_fixed_column_of_grades_csv_in_order() -> None:
    """docs/grading-many.md's "The columns are `...`" is the fixed columns grades.csv writes, all and in order,
    and its "then `...` when the similarity check ran" the two it adds then."""
    from grader.round import summary

    text = " ".join((ROOT / "docs" / "grading-many.md").read_text(encoding="utf-8").split())
    found = re.search(r"The columns are `([^`]+)`, then `([^`]+)` when the similarity check ran", text)
    assert found, "docs/grading-many.md no longer states grades.csv's columns"
    assert [c.strip() for c in found[1].split(",")] == summary.FIXED_COLUMNS
    assert [c.strip() for c in found[2].split(",")] == summary.SIMILARITY_COLUMNS


def test_the_fake_servers_readme_lists_every_fault_kind() -> None:
    """fake_server/README.md's list of rules ("Rules in a scenario file, ...") names every kind `KINDS` declares,
    and no kind that is not one."""
    from fake_server.engine.faults import KINDS

    text = (ROOT / "fake_server" / "README.md").read_text(encoding="utf-8")
    paragraph = text.split("Rules in a scenario file,", 1)[1].split("A stopped server", 1)[0]
    named = set(re.findall(r"`([a-z_]+)`", paragraph)) - {"every", "rate", "model", "status", "seconds"}
    assert named == {kind.name for kind in KINDS}


def test_recipes_lists_every_gateway_case_kind_the_rubric_takes() -> None:
    """docs/recipes.md's "`kind` (`one`, ...: how the runner drives it" is the rubric schema's every case kind."""
    schema = json.loads((ROOT / "schemas" / "grader" / "rubric.schema.json").read_text(encoding="utf-8"))
    kinds = set(schema["$defs"]["gateway"]["properties"]["cases"]["items"]["properties"]["kind"]["enum"])
    text = " ".join((ROOT / "docs" / "recipes.md").read_text(encoding="utf-8").split())
    found = re.search(r"`kind` \(([^:]+): how the runner drives it", text)
    assert found and set(re.findall(r"`([a-z-]+)`", found[1])) == kinds


def test_the_docs_index_lists_every_page() -> None:
    index = (ROOT / "docs" / "README.md").read_text(encoding="utf-8")
    pages = {p.name for p in (ROOT / "docs").glob("*.md")} - {"README.md"}
    assert {page for page in pages if f"]({page})" not in index} == set()
