"""The fast tier (`make test-fast`): every test but the slow ones and those that took a second or more last time.

An edit wants an answer in under two minutes on two cores. The tests marked `slow` are left to `make test`; so
are the tests that took `LIMIT` seconds or more (setup, call and teardown together) in the last recorded run,
listed in tests/durations.json. `make durations` records that file again from a run of every test but the slow
ones. With FAST_TIER=1 the tier leaves those tests out and says how many, so the inner loop never grows unseen;
`make test` runs every one of them.

Registered as a plugin by tests/conftest.py.
"""

from __future__ import annotations

import json
import os
from collections import defaultdict
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
DURATIONS = ROOT / "tests" / "durations.json"
LIMIT = 1.0  # seconds: a test this long is left to `make test`
KEPT = 0.3  # the recording keeps the tests at least this long (the rest are not worth a line)

_seconds: dict[str, float] = defaultdict(float)


def _recorded() -> dict[str, float]:
    if not DURATIONS.is_file():
        return {}
    data = json.loads(DURATIONS.read_text(encoding="utf-8"))
    return {str(k): float(v) for k, v in data.get("seconds", {}).items()}


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if os.environ.get("FAST_TIER") != "1":
        return
    long = {nodeid for nodeid, seconds in _recorded().items() if seconds >= LIMIT}
    left = [item for item in items if item.nodeid in long]
    if left:
        items[:] = [item for item in items if item.nodeid not in long]
        config.hook.pytest_deselected(items=left)


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    if os.environ.get("RECORD_DURATIONS") == "1":
        _seconds[report.nodeid] += report.duration


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter, config: pytest.Config) -> None:
    left = sum(1 for seconds in _recorded().values() if seconds >= LIMIT) if os.environ.get("FAST_TIER") == "1" else 0
    if left:
        terminalreporter.write_line(
            f"fast tier: {left} tests of {LIMIT:g} s or more left to `make test` (tests/durations.json)"
        )


def pytest_sessionfinish(session: pytest.Session) -> None:
    if os.environ.get("RECORD_DURATIONS") != "1" or hasattr(session.config, "workerinput") or not _seconds:
        return
    kept = {nodeid: round(s, 2) for nodeid, s in sorted(_seconds.items()) if s >= KEPT}
    DURATIONS.write_text(
        json.dumps({"command": "make durations", "limit_s": LIMIT, "seconds": kept}, indent=1) + "\n",
        encoding="utf-8",
    )
