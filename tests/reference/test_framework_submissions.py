"""A submission built on the libraries serving engineers reach for first scores full marks on the load
generator and the gateway: the grader judges what the contract states, not how it is built. The
bundle test grades it (`grader check --only loadgen --only gateway`) in the sandbox of a kit
installed from the offline bundle; this file checks that it is built on what it claims.

The submission (tests/fixtures/frameworks_submission) was written from TASK.md and the contract alone:
an aiohttp load generator, and a FastAPI gateway served by uvicorn whose API route calls the hosted
API with httpx directly (not the kit's stub client), relaying its server-sent events as they arrive.
"""

from __future__ import annotations

import ast
from pathlib import Path

from kit_paths import ROOT

FRAMEWORKS = ROOT / "tests" / "fixtures" / "frameworks_submission"


def imported_modules(folder: Path) -> set[str]:
    """Top-level names of every module the code under `folder` imports (its tests left out)."""
    names: set[str] = set()
    for path in folder.rglob("*.py"):
        if "tests" in path.relative_to(folder).parts:
            continue
        for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
            if isinstance(node, ast.Import):
                names.update(alias.name.split(".")[0] for alias in node.names)
            elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                names.add(node.module.split(".")[0])
    return names


def test_the_submission_is_built_on_aiohttp_fastapi_and_httpx() -> None:
    loadgen, gateway = imported_modules(FRAMEWORKS / "loadgen"), imported_modules(FRAMEWORKS / "gateway")
    assert "aiohttp" in loadgen and not loadgen & {"httpx", "openai", "requests"}, sorted(loadgen)
    assert {"fastapi", "uvicorn", "httpx"} <= gateway, sorted(gateway)
    assert not gateway & {"api_client", "openai", "aiohttp"}, sorted(gateway)
