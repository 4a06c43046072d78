"""Where `make test-image` leaves its last result for the next person: bench/results/pods.json.

The pod test (tests/pods) is opt-in, 25 minutes, so its outcome would otherwise live only in a terminal. A real
run (POD_TEST=1) writes each test's outcome and time, the date, the commit and the command beside the figures
the tests record as they go (`record`: image size, seconds per pod and per grade, the report lines). A run
without POD_TEST skips those tests and writes nothing, so `make test` never overwrites the last real result.
Registered as a plugin by tests/conftest.py.
"""

from __future__ import annotations

import datetime
import json
import os
import subprocess
from collections.abc import Generator
from pathlib import Path
from typing import Any

import pluggy
import pytest

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "bench" / "results" / "pods.json"
POD_TESTS = "test_pods.py"  # the tests that run pods; the checks beside them run in every `make test`


def _real() -> bool:
    return os.environ.get("POD_TEST") == "1"


def record(**figures: Any) -> None:
    """Merge `figures` into the last result."""
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    known = json.loads(RESULTS.read_text()) if RESULTS.is_file() else {}
    RESULTS.write_text(json.dumps({**known, **figures}, indent=1) + "\n")


def _now() -> str:
    return datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds")


def _commit() -> str:
    def git(*args: str) -> str:
        return subprocess.run(["git", *args], capture_output=True, text=True, check=False, cwd=ROOT).stdout.strip()

    # the result file itself is rewritten as the run goes: a change of its own is no change to what was tested
    changed = git("status", "--porcelain", "--untracked-files=no", "--", ".", f":(exclude){RESULTS.relative_to(ROOT)}")
    return git("rev-parse", "--short", "HEAD") + ("+changes" if changed else "")


def pytest_collection_finish(session: pytest.Session) -> None:
    """A real run that collected pod tests starts a new result."""
    if _real() and any(item.path.name == POD_TESTS for item in session.items):
        commit = _commit()
        RESULTS.unlink(missing_ok=True)
        record(
            command="make test-image",
            date=datetime.date.today().isoformat(),
            commit=commit,
            started=_now(),
            outcomes={},
            seconds={},
        )


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(
    item: pytest.Item, call: pytest.CallInfo[None]
) -> Generator[None, pluggy.Result[pytest.TestReport], None]:
    outcome = yield
    report = outcome.get_result()
    if not _real() or item.path.name != POD_TESTS or not RESULTS.is_file():
        return
    if report.when == "call" or (report.when == "setup" and report.outcome != "passed"):
        known = json.loads(RESULTS.read_text())
        record(
            outcomes={**known.get("outcomes", {}), item.name: report.outcome},
            seconds={**known.get("seconds", {}), item.name: round(report.duration, 1)},
            ended=_now(),
        )
