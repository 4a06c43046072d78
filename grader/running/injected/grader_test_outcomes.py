"""Injected by the grader into a candidate's pytest run: record each test's outcome, and run only some.

Loaded through PYTEST_PLUGINS; writes {node id: passed | failed | skipped} as JSON to
GRADER_TEST_OUTCOMES when the session ends, so the grader can name a test that failed and tell
which tests a wrong variant broke. With GRADER_ONLY_TESTS (a JSON list of node ids), every other
test is deselected: a variant that concerns some tests runs them alone. It imports nothing from the kit.
"""

from __future__ import annotations

import json
import os
from typing import Any

_outcomes: dict[str, str] = {}


def pytest_collection_modifyitems(config: Any, items: list[Any]) -> None:
    only = json.loads(os.environ.get("GRADER_ONLY_TESTS") or "[]")
    if not only:
        return
    wanted = set(only)
    config.hook.pytest_deselected(items=[item for item in items if item.nodeid not in wanted])
    items[:] = [item for item in items if item.nodeid in wanted]


def pytest_runtest_logreport(report: Any) -> None:
    if report.when == "call" or report.outcome != "passed":
        previous = _outcomes.get(report.nodeid)
        if previous != "failed":
            _outcomes[report.nodeid] = report.outcome


def pytest_sessionfinish(session: Any, exitstatus: int) -> None:
    path = os.environ.get("GRADER_TEST_OUTCOMES")
    if path:
        with open(path, "w", encoding="utf-8") as f:
            json.dump({"exitstatus": int(exitstatus), "tests": _outcomes}, f, sort_keys=True)
