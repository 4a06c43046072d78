"""Injected by the grader into a candidate's pytest run: record each test's outcome.

Loaded through PYTEST_PLUGINS; writes {node id: passed | failed | skipped} as JSON to
GRADER_TEST_OUTCOMES when the session ends, so the grader can name a test that failed and tell
which tests a wrong variant broke. It imports nothing from the kit.
"""

from __future__ import annotations

import json
import os
from typing import Any

_outcomes: dict[str, str] = {}


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
