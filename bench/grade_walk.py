"""A grade's request, walked module by module: the calls a reader cannot follow by reading the imports.

A grade of the reference is run under a profiler that notes every call from one grader module into another.
A call into a module the caller does not import (anywhere in its source, inline imports too) reached it through
something handed in: a callback, a closure, an object of a type the caller never names. Those are the places a
reader walking the request must go back up to learn where a call lands. Among them, a call from a room to one on
a higher floor (grader/kit/rooms.py) is the request coming back up through something handed down. The bench
counts both (distinct caller and callee modules), lists them, and counts the modules and rooms the request went
through.

`--against CHECKOUT` runs the same walk with another checkout's grader (a git worktree of an earlier commit with
its own `.venv`), so the two counts come from the same grade on the same machine.

    python -m bench.grade_walk [--only PART ...] [--against CHECKOUT]
"""

from __future__ import annotations

import argparse
import ast
import json
import subprocess
import sys
import tempfile
import threading
from collections import Counter
from pathlib import Path
from types import FrameType
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
#: Untimed sections and one load-generator and one gateway criterion: every room a grade passes through, in about
#: a minute (the candidate's tests add only more of the same runs).
ONLY = ("loadgen.role-chunk", "gateway.fallback-5xx", "sizing", "manifests", "memo")


def _module_of(path: Path, package: Path) -> str | None:
    """`grader/grading/judging.py` -> `grading/judging.py`; None outside the grader package."""
    try:
        return path.resolve().relative_to(package).as_posix()
    except ValueError:
        return None


def _imports(package: Path) -> dict[str, set[str]]:
    """Each module's imports of the grader, as module paths (`grading/judging.py`), inline imports included."""
    found: dict[str, set[str]] = {}
    for path in package.rglob("*.py"):
        module = path.relative_to(package).as_posix()
        names: set[str] = set()
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom):
                base = _resolved(module, node.module or "", node.level)
                names.add(base)
                names.update(f"{base}.{alias.name}" for alias in node.names)
            elif isinstance(node, ast.Import):
                names.update(alias.name for alias in node.names)
        found[module] = {m for name in names if (m := _as_path(name, package)) is not None}
    return {module: _through_packages(imported, found) for module, imported in found.items()}


def _through_packages(imported: set[str], found: dict[str, set[str]]) -> set[str]:
    """`imported`, with what each package's `__init__.py` among them imports in turn: `from grader.sandbox import
    Sandbox` names sandbox/box.py as a reader follows it."""
    seen = set(imported)
    todo = [m for m in imported if m.endswith("__init__.py")]
    while todo:
        for module in found.get(todo.pop(), set()) - seen:
            seen.add(module)
            if module.endswith("__init__.py"):
                todo.append(module)
    return seen


def _resolved(module: str, name: str, level: int) -> str:
    """A relative import's absolute dotted name."""
    if level == 0:
        return name
    parts = ["grader", *module.removesuffix(".py").split("/")][:-level]
    return ".".join(parts + ([name] if name else []))


def _as_path(dotted: str, package: Path) -> str | None:
    if not dotted.startswith("grader"):
        return None
    rel = Path(*dotted.split(".")[1:])
    if (package / rel).with_suffix(".py").is_file():
        return rel.with_suffix(".py").as_posix()
    if (package / rel / "__init__.py").is_file():
        return (rel / "__init__.py").as_posix()
    return None


def walk(only: tuple[str, ...]) -> dict[str, Any]:
    """Grade the reference on `only` under the profiler; what the walk met."""
    import grader
    from grader.grading.grade import GradeRequest, grade

    package = Path(grader.__file__).resolve().parent
    imports = _imports(package)
    calls: Counter[tuple[str, str]] = Counter()
    modules: dict[Any, str | None] = {}
    local = threading.local()

    def profile(frame: FrameType, event: str, arg: Any) -> None:
        if event not in ("call", "return"):
            return
        code = frame.f_code
        if code not in modules:
            modules[code] = _module_of(Path(code.co_filename), package)
        module = modules[code]
        if module is None:
            return
        stack: list[str] = local.__dict__.setdefault("stack", [])
        if event == "return":
            if stack:
                stack.pop()
            return
        if stack and stack[-1] != module:
            calls[(stack[-1], module)] += 1
        stack.append(module)

    with tempfile.TemporaryDirectory() as out:
        request = GradeRequest(ROOT / "submissions" / "reference", Path(out), only=only, seed=0, echo=lambda _: None)
        threading.setprofile(profile)
        sys.setprofile(profile)
        try:
            result = grade(request)
        finally:
            sys.setprofile(None)
            threading.setprofile(None)  # None removes the hook, as the docs say
    handed = sorted(f"{a} -> {b}" for a, b in calls if b not in imports.get(a, set()) and b != "__init__.py")
    floor = _floors()
    up = sorted(f"{a} -> {b}" for a, b in calls if floor.get(_room(b), -1) > floor.get(_room(a), -1))
    met = {m for pair in calls for m in pair}
    return {
        "score": f"{result.score:g}/{result.max_score:g}",
        "modules": len(met),
        "rooms": len({_room(m) for m in met}),
        "module_calls": len(calls),
        "not_imported": len(handed),
        "not_imported_calls": handed,
        "up_the_floors": len(up),
        "up_the_floors_calls": up,
    }


def _room(module: str) -> str:
    """`grading/judging.py` -> `grading`; a top-level module is its own room (`contract.py` -> `contract`)."""
    return module.split("/")[0].removesuffix(".py")


def _floors() -> dict[str, int]:
    """Each room's floor (grader/kit/rooms.py): a call from a room to one on a higher floor came back up, through
    something handed down."""
    from grader.kit.rooms import FLOORS

    return {room: level for level, rooms in enumerate(FLOORS) for room, _ in rooms}


def _walk_of(checkout: Path, only: tuple[str, ...]) -> dict[str, Any]:
    """The same walk with `checkout`'s grader and its own `.venv`; a checkout that cannot make it is named, and why."""
    python = checkout / ".venv" / "bin" / "python"
    if not python.is_file():
        raise SystemExit(f"--against {checkout}: no {python} (run `make .venv/.installed` in that checkout first)")
    other = subprocess.run(
        [str(python), str(Path(__file__).resolve()), "--json"] + [flag for part in only for flag in ("--only", part)],
        cwd=checkout,
        env={"PYTHONPATH": str(checkout), "PATH": "/usr/bin:/bin"},
        capture_output=True,
        text=True,
        check=False,
    )
    if other.returncode != 0:
        raise SystemExit(f"--against {checkout}: its walk failed (exit {other.returncode}):\n{other.stderr[-2000:]}")
    found: dict[str, Any] = json.loads(other.stdout.strip().splitlines()[-1])
    return found


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--only", action="append", help="criteria or deliverables graded (default: a spread of both)")
    parser.add_argument("--against", type=Path, help="another checkout, walked the same way with its own .venv")
    parser.add_argument("--json", action="store_true", help="print this checkout's walk as JSON, and write nothing")
    args = parser.parse_args()
    only = tuple(args.only or ONLY)
    if args.json:
        print(json.dumps(walk(only)))
        return
    against = _walk_of(args.against, only) if args.against is not None else None  # a checkout that cannot: at once
    runs = {"this": walk(only)} | ({"against": against} if against is not None else {})
    for label, found in runs.items():
        print(
            f"{label}: {found['score']}, {found['modules']} modules in {found['rooms']} rooms, "
            f"{found['module_calls']} caller-callee pairs, {found['not_imported']} into a module the caller does not import, "
            f"{found['up_the_floors']} up the floors"
        )
    from bench import results_dir

    command = "python -m bench.grade_walk" + (f" --against {args.against}" if args.against else "")
    record = {"command": command, "only": list(only), **runs}
    (results_dir() / "grade_walk.json").write_text(json.dumps(record, indent=1) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
