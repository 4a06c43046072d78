"""No function in the grader or the fake server runs past 80 lines: one that does does several jobs, and is split
into named steps a reader can find (the grade's section runner, the rubric's readers, the sandbox's launch)."""

from __future__ import annotations

import ast
from pathlib import Path

from kit_paths import ROOT

LIMIT = 80


def too_long(folder: Path, limit: int = LIMIT) -> list[str]:
    """`path:line name (N lines)` for every function or method under `folder` longer than `limit` lines."""
    out = []
    for path in sorted(folder.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                lines = (node.end_lineno or node.lineno) - node.lineno + 1
                if lines > limit:
                    out.append(f"{path.relative_to(folder.parent)}:{node.lineno} {node.name} ({lines} lines)")
    return out


def test_no_function_of_the_grader_or_the_fake_server_is_over_80_lines() -> None:
    assert too_long(ROOT / "grader") + too_long(ROOT / "fake_server") == []


def test_the_count_finds_a_long_function(tmp_path: Path) -> None:
    folder = tmp_path / "pkg"
    folder.mkdir()
    body = "\n".join(f"    x{i} = {i}" for i in range(LIMIT))
    (folder / "long.py").write_text(f"def short():\n    return 1\n\n\ndef long():\n{body}\n", encoding="utf-8")
    assert too_long(folder) == [f"pkg/long.py:5 long ({LIMIT + 1} lines)"]
