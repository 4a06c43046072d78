"""Judging is pure: it is handed verdicts and objects, and the runner (or a re-judge) decides to make or read a
rerun. A judging module that could run something would be caught here before it hid a sandbox behind a callback."""

from __future__ import annotations

import ast
from pathlib import Path

from grader.grading import judging

RUNNING = ("grader.running", "grader.sandbox", "grader.grading.section_runs", "grader.grading.runner", "grader.live")


def _imports(path: Path) -> set[str]:
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom) and node.module:
            found.add(node.module)
        elif isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
    return found


def test_judging_imports_nothing_that_runs_and_takes_no_callback() -> None:
    path = Path(judging.__file__)
    imported = _imports(path)
    assert not [m for m in imported if m.startswith(RUNNING)], imported
    assert "Callable" not in path.read_text(encoding="utf-8")  # no "fetch attempt 2 for me" handed in


def test_a_planted_callback_would_be_found(tmp_path: Path) -> None:
    planted = tmp_path / "judging.py"
    planted.write_text("from grader.grading.section_runs import SectionRuns\n", encoding="utf-8")
    assert "grader.grading.section_runs" in _imports(planted)
