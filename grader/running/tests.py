"""Run the candidate's own tests: once as they are, then once per broken variant, and keep the outcomes.

"Wheats and chaffs": the test command is run once as it is, then once per wrong variant. Two kinds
of variant, both applied from outside the candidate's code:
- a wrong percentile method swapped in for the submission's `loadgen.percentile` function
  (injected `sitecustomize.py`, see `injected/`), and
- a fake server whose slot limit is removed (FAKE_SERVER_IGNORE_SLOT_LIMIT=1, honoured by the
  kit's `fake_server` fixture and `fake-server serve`); and in a grade, the slot tests that run
  caught, each run alone against servers whose slots and token rate are drawn (FAKE_SERVER_DRAW=SEED),
  with the slot limit and without it.
Every run gets the same injected files and variables (with a harmless value when no variant is
applied), so a run does not announce itself by their presence alone. A `TestRuns` is the run
record; criteria/tests.py judges it.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from grader.contract import Submission
from grader.records.loadgen import HUNG
from grader.records.tests import (
    DRAWN_NO_SLOTS,
    DRAWN_SERVER,
    NO_SLOTS,
    PERCENTILE_METHODS,
    UNSEEN_PERCENTILE,
    TestRun,
    TestRuns,
)
from grader.running.cpu_wait import CpuWait
from grader.sandbox.box_api import Box

__all__ = ["CANDIDATE_PLUGINS", "WRONG_METHOD_MODULE", "run_tests"]
_INJECTED = Path(__file__).resolve().parent / "injected"


#: The module a wrong method the brief does not name is injected as (injected/sitecustomize.py imports it).
WRONG_METHOD_MODULE = "grader_wrong_method.py"

#: The pytest plugins a candidate's kit installs: the fake server's fixtures, and anyio's (it comes with httpx).
CANDIDATE_PLUGINS = ("fake_server.pytest_plugin", "anyio.pytest_plugin")


def _inject() -> dict[str, str]:
    return {p.name: p.read_text(encoding="utf-8") for p in sorted(_INJECTED.glob("*.py"))}


def _run(
    box: Box,
    submission: Submission,
    variant: str,
    *,
    timeout_s: float,
    method: str = "none",
    source: str = "",
    no_slots: bool = False,
    draw: str = "0",
    only: tuple[str, ...] = (),
    stop_early: bool = False,
) -> TestRun:
    argv = submission.command("loadgen", "test_command")
    slug = "".join(c if c.isalnum() else "-" for c in variant)
    outcomes, marker = f".grader-tests-{slug}.json", f".grader-swapped-{slug}"  # one per run: never a stale file
    env = {
        "GRADER_PERCENTILE": str(submission.data["loadgen"].get("percentile", "")),
        "GRADER_PERCENTILE_METHOD": method,
        "GRADER_PERCENTILE_MARKER": marker,
        "GRADER_TEST_OUTCOMES": outcomes,
        "FAKE_SERVER_IGNORE_SLOT_LIMIT": "1" if no_slots else "0",
        "FAKE_SERVER_DRAW": draw,
        "GRADER_ONLY_TESTS": json.dumps(list(only)),
        # The plugins of the candidate's kit and no others: what else the grading machine has installed
        # (pytest-randomly, a fuzzer's plugin) must not change the outcome, nor cost each run a second.
        "PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1",
        "PYTEST_PLUGINS": ",".join(("grader_test_outcomes", *CANDIDATE_PLUGINS)),
        "PYTEST_ADDOPTS": "-rf -p no:cacheprovider" + (" -x" if stop_early else ""),
    }
    waiting = CpuWait()
    inject = _inject() | ({WRONG_METHOD_MODULE: source} if source else {})
    result = box.run(argv, timeout_s=timeout_s, env=env, inject=inject, files_back=[outcomes, marker])
    cpu_waiting = waiting.share()
    files = result.files or {}
    tests: dict[str, str] = {}
    if text := files.get(outcomes):
        try:
            tests = dict(json.loads(text).get("tests", {}))
        except (json.JSONDecodeError, AttributeError):
            tests = {}
    killed = f"hung: stopped after {timeout_s:g} s" if result.killed == HUNG else result.killed
    logs = f"$ {' '.join(argv)}   [{variant}]\nexit code: {result.exit_code}" + (
        f" (killed: {killed})" if killed else ""
    )
    tail = (result.stdout_tail or "")[-2500:] + (result.stderr_tail or "")[-1500:]
    return TestRun(
        variant,
        result.exit_code,
        killed,
        tests,
        bool(files.get(marker)),
        logs + "\n" + tail,
        result.wall_s,
        cpu_waiting,
    )


def run_tests(
    box: Box,
    submission: Submission,
    *,
    variants: tuple[str, ...],
    limits: dict[str, float],
    unseen_methods: dict[str, str] | None = None,
    server_draw: str | None = None,
) -> TestRuns:
    """The own-code run (stopped at the rubric's own_s), then the variants asked for ("percentile", "slots",
    "drawn-slots"), each stopped at per_own x the own run's time (at least min_s), and at its first failure when
    the own-code run passed whole. When the own-code run hung, no variant runs: they would hang too. With
    "percentile", `unseen_methods` (name -> a module's source defining `method`) are swapped in too, one run each.
    With "drawn-slots" and a `server_draw` seed, the slot-limit run goes to its end (every slot test is named),
    and the tests it caught run alone against the drawn servers, with the slot limit and without."""
    own = _run(box, submission, "own code", timeout_s=limits["own_s"])
    runs = TestRuns(own)
    early = own.exit_code == 0
    hung = own.killed is not None and own.killed.startswith("hung")
    limit = round(max(limits["min_s"], limits["per_own"] * own.wall_s), 1)
    wanted: list[tuple[str, dict[str, Any]]] = []
    if "percentile" in variants:
        wanted += [(f"percentile: {m}", {"method": m}) for m in PERCENTILE_METHODS]
        wanted += [
            (f"{UNSEEN_PERCENTILE}{name}", {"method": "injected", "source": source})
            for name, source in sorted((unseen_methods or {}).items())
        ]
    drawn = "drawn-slots" in variants and bool(server_draw)
    if "slots" in variants or drawn:
        wanted.append((NO_SLOTS, {"no_slots": True, "stop_early": early and not drawn}))
    for name, how in wanted:
        if hung:
            runs.variants[name] = _not_run(name)
        else:
            runs.variants[name] = _run(box, submission, name, timeout_s=limit, **{"stop_early": early, **how})
    slot_tests = tuple(runs.slot_tests)
    if drawn and slot_tests:
        assert server_draw is not None
        for name, no_slots in ((DRAWN_SERVER, False), (DRAWN_NO_SLOTS, True)):
            runs.variants[name] = _run(
                box, submission, name, timeout_s=limit, draw=server_draw, no_slots=no_slots, only=slot_tests
            )
    return runs


def _not_run(name: str) -> TestRun:
    return TestRun(
        name,
        None,
        "not run: the tests hung on your own code",
        {},
        False,
        f"[{name}] not run: the own-code run hung",
        0.0,
    )
