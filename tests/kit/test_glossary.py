"""One word, one thing: no two public classes of the kit share a name, and every class the glossary of
docs/architecture.md names is the one class of that name. A second `Context` or `Finding` fails here."""

from __future__ import annotations

import ast
import re
from collections import defaultdict
from pathlib import Path

from kit_paths import ROOT

GLOSSARY = ROOT / "docs" / "architecture.md"


def _classes(*roots: Path) -> dict[str, list[str]]:
    """Every public class, and every module-level type alias named like one (`TimeLimits = dict[...]`), by name,
    with the file each is defined in."""
    found: dict[str, list[str]] = defaultdict(list)
    for root in roots:
        for path in sorted(root.rglob("*.py")):
            tree = ast.parse(path.read_text(encoding="utf-8"))
            names = [n.name for n in ast.walk(tree) if isinstance(n, ast.ClassDef)]
            names += [
                target.id
                for n in tree.body
                if isinstance(n, ast.Assign)
                for target in n.targets
                if isinstance(target, ast.Name) and re.fullmatch(r"[A-Z][a-z]+[A-Za-z]*", target.id)
            ]
            for name in names:
                if not name.startswith("_"):
                    found[name].append(str(path))
    return found


def _glossary_classes() -> set[str]:
    text = GLOSSARY.read_text(encoding="utf-8")
    table = text.split("## Glossary", 1)[1].split("\n## ", 1)[0]
    return set(re.findall(r"`([A-Z][a-z]+(?:[A-Z][a-z]*)+|[A-Z][a-z]{2,})`", table))


def test_no_two_public_classes_share_a_name() -> None:
    shared = {name: where for name, where in _classes(ROOT / "grader", ROOT / "fake_server").items() if len(where) > 1}
    assert shared == {}, shared


def test_every_class_the_glossary_names_is_defined_once() -> None:
    classes = _classes(ROOT / "grader", ROOT / "fake_server")
    named = _glossary_classes()
    assert {"GradeRequest", "RunKey", "SectionRuns", "UnseenMaterial", "Box"} <= named, named
    wrong = {name: classes.get(name, []) for name in named if len(classes.get(name, [])) != 1}
    assert wrong == {}, wrong


def test_a_second_class_of_one_name_is_found(tmp_path: Path) -> None:
    for folder in ("a", "b"):
        (tmp_path / folder).mkdir()
        (tmp_path / folder / "m.py").write_text("class Context:\n    pass\nTimeLimits = dict\n", encoding="utf-8")
    found = _classes(tmp_path)
    assert len(found["Context"]) == 2 and len(found["TimeLimits"]) == 2
