"""The grader's rooms depend one way, floor by floor, and no module imports itself round a circle.

Every import is read from the source, those inside functions too: an import deferred to call time
still ties the two modules together, and hiding a cycle that way is what this test is for. A room
is a subpackage of `grader` (or a top-level module); a room may import rooms on lower floors, never
its own floor's neighbours or anything above it. docs/architecture.md states the same floors.
"""

from __future__ import annotations

import ast
import shutil
from pathlib import Path

from kit_paths import ROOT

from grader.kit.rooms import FLOORS as ROOMS

#: Lowest first. A room imports only rooms on a lower floor (and itself): grader/kit/rooms.py says which.
FLOORS: tuple[frozenset[str], ...] = tuple(frozenset(room for room, _ in rooms) for rooms in ROOMS)


def _modules(package: Path) -> dict[str, Path]:
    """Dotted module name below `grader` -> its file (a package is its __init__)."""
    out = {}
    for path in package.rglob("*.py"):
        parts = path.relative_to(package).with_suffix("").parts
        name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts) or "__init__"
        out[name] = path
    return out


def _imports(package: Path) -> dict[str, set[str]]:
    """Module -> the grader modules it imports, at module level or inside a function."""
    modules = _modules(package)
    graph: dict[str, set[str]] = {}
    for name, path in modules.items():
        deps: set[str] = set()
        here = name.split(".") if path.name == "__init__.py" else name.split(".")[:-1]
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            targets: list[str] = []
            if isinstance(node, ast.ImportFrom) and (node.level or (node.module or "").split(".")[0] == "grader"):
                if node.level:  # `from ..x import y`, from where this module's package is
                    base = here[: len(here) - (node.level - 1)] if name != "__init__" else []
                    below = ".".join([*base, *([node.module] if node.module else [])])
                else:
                    below = (node.module or "").removeprefix("grader").lstrip(".")
                # `from grader.x import y`: y is a module when grader/x/y is one, else a name in x
                targets = [f"{below}.{a.name}".lstrip(".") for a in node.names]
                targets = [t if t in modules else below or "__init__" for t in targets]
            elif isinstance(node, ast.Import):
                targets = [
                    a.name.removeprefix("grader").lstrip(".") or "__init__"
                    for a in node.names
                    if a.name.split(".")[0] == "grader"
                ]
            deps |= {t for t in targets if t != name}
        graph[name] = deps
    return graph


def _room(module: str) -> str:
    return module.split(".")[0]


def _floor(room: str) -> int:
    return next(i for i, rooms in enumerate(FLOORS) if room in rooms)


def layering_problems(package: Path) -> list[str]:
    """Every import against the floors, every room no floor names, and every import cycle."""
    graph = _imports(package)
    problems = [
        f"{m}: its room {_room(m)!r} is on no floor" for m in graph if not any(_room(m) in rooms for rooms in FLOORS)
    ]
    if problems:
        return problems
    for module, deps in sorted(graph.items()):
        for dep in sorted(deps):
            here, there = _room(module), _room(dep)
            if here != there and _floor(there) >= _floor(here):
                problems.append(
                    f"{module} imports {dep}: {here} (floor {_floor(here)}) may not import "
                    f"{there} (floor {_floor(there)})"
                )
    seen: set[tuple[str, ...]] = set()
    for start in sorted(graph):  # the shortest cycle through each module that is on one (breadth first)
        parents: dict[str, str] = {}
        queue, found = [start], None
        while queue and found is None:
            module = queue.pop(0)
            for dep in sorted(graph.get(module, ())):
                if dep == start:
                    found = module
                    break
                if dep in graph and dep not in parents:
                    parents[dep] = module
                    queue.append(dep)
        if found is not None:
            path = [found]
            while path[-1] != start:
                path.append(parents[path[-1]])
            path.reverse()
            cycle = tuple(path[path.index(min(path)) :] + path[: path.index(min(path))])
            if cycle not in seen:
                seen.add(cycle)
                problems.append("import cycle: " + " -> ".join((*cycle, cycle[0])))
    return problems


def test_the_grader_is_layered_and_has_no_import_cycle() -> None:
    graph = _imports(ROOT / "grader")
    # the rooms the floors name are all there (a renamed room would leave its floor empty)
    assert {_room(m) for m in graph} == set().union(*FLOORS)
    assert layering_problems(ROOT / "grader") == []


def test_a_planted_cycle_and_an_upward_import_are_caught(tmp_path: Path) -> None:
    """A judging module that imports the grade inside a function: an import up the floors, and a cycle."""
    copy = tmp_path / "grader"
    shutil.copytree(ROOT / "grader", copy, ignore=shutil.ignore_patterns("__pycache__", "hidden", "*.yaml"))
    verdict = copy / "criteria" / "verdict.py"
    verdict.write_text(
        verdict.read_text() + "\n\ndef _late() -> None:\n    from grader.grading.grade import grade  # noqa\n"
    )
    problems = layering_problems(copy)
    assert any(p.startswith("criteria.verdict imports grading.grade: criteria (floor 3)") for p in problems), problems
    assert any(p.startswith("import cycle:") and "criteria.verdict" in p and "grading.grade" in p for p in problems)


def test_the_grader_uses_only_the_fake_servers_public_api() -> None:
    """The grader drives the fake server through what `fake_server/__init__.py` exports: its modules are
    the fake server's to rearrange, and a grade must not depend on how they are laid out."""
    reached = []
    for path in sorted((ROOT / "grader").rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom) and not node.level:
                names = [node.module or ""]
            elif isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            else:
                continue
            reached += [
                f"{path.relative_to(ROOT)}:{node.lineno} imports {n}" for n in names if n.startswith("fake_server.")
            ]
    assert reached == []


def test_only_the_cli_speaks_click() -> None:
    """The terminal side of every command lives in grader/cli/: a library room that raised click's exceptions or
    echoed would be a second click layer beside it (a round's commands had one)."""
    grader_dir = Path(__file__).parents[2] / "grader"
    speaking = sorted(
        str(path.relative_to(grader_dir))
        for path in grader_dir.rglob("*.py")
        if "cli" not in path.relative_to(grader_dir).parts[:1]
        and any(
            (isinstance(n, ast.Import) and any(a.name == "click" for a in n.names))
            or (isinstance(n, ast.ImportFrom) and (n.module or "").split(".")[0] == "click")
            for n in ast.walk(ast.parse(path.read_text(encoding="utf-8")))
        )
    )
    assert speaking == [], speaking
