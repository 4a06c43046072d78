"""The candidate's own tests: they must pass on the candidate's code and fail on the chaff.

"Wheats and chaffs": the test command is run once as it is, then once per wrong variant. A
variant is caught when a test that passed on the candidate's own code fails under it. Two kinds
of variant, both applied from outside the candidate's code:
- a wrong percentile method swapped in for the submission's `loadgen.percentile` function
  (injected `sitecustomize.py`, see `injected/`), and
- a fake server whose slot limit is removed (FAKE_SERVER_IGNORE_SLOT_LIMIT=1, honoured by the
  kit's `fake_server` fixture and `fake-server serve`).
Every run gets the same injected files and variables (with a harmless value when no variant is
applied), so a run does not announce itself by their presence alone.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from grader.contract import Submission
from grader.criteria.verdict import Verdict
from grader.grading.outcome import Evidence
from grader.grading.rubric import Criterion
from grader.runs.loadgen import Box

__all__ = ["CHECKS", "PERCENTILE_METHODS", "TestRuns", "run_tests"]

PERCENTILE_METHODS = ("linear", "floor", "off-by-one", "unsorted")
TIMEOUT_S = 300.0
_INJECTED = Path(__file__).resolve().parents[1] / "runs" / "injected"


@dataclass
class TestRun:
    variant: str  # "own code", "percentile: linear", "no slot limit", ...
    exit_code: int | None
    killed: str | None
    tests: dict[str, str]  # node id -> passed | failed | skipped (pytest only; empty otherwise)
    swapped: bool  # the percentile function was really replaced
    logs: str
    wall_s: float

    @property
    def failed(self) -> list[str]:
        return sorted(k for k, v in self.tests.items() if v == "failed")


@dataclass
class TestRuns:
    own: TestRun
    variants: dict[str, TestRun] = field(default_factory=dict)


def _inject() -> dict[str, str]:
    return {p.name: p.read_text(encoding="utf-8") for p in sorted(_INJECTED.glob("*.py"))}


def _run(box: Box, submission: Submission, variant: str, *, method: str = "none", no_slots: bool = False,
         stop_early: bool = False) -> TestRun:
    argv = submission.command("loadgen", "test_command")
    slug = "".join(c if c.isalnum() else "-" for c in variant)
    outcomes, marker = f".grader-tests-{slug}.json", f".grader-swapped-{slug}"  # one per run: never a stale file
    env = {
        "GRADER_PERCENTILE": str(submission.data["loadgen"].get("percentile", "")),
        "GRADER_PERCENTILE_METHOD": method,
        "GRADER_PERCENTILE_MARKER": marker,
        "GRADER_TEST_OUTCOMES": outcomes,
        "FAKE_SERVER_IGNORE_SLOT_LIMIT": "1" if no_slots else "0",
        "PYTEST_PLUGINS": "grader_test_outcomes",
        "PYTEST_ADDOPTS": "-rf -p no:cacheprovider" + (" -x" if stop_early else ""),
    }
    result = box.run(argv, timeout_s=TIMEOUT_S, env=env, inject=_inject(), files_back=[outcomes, marker])
    files = result.files or {}
    tests: dict[str, str] = {}
    if files.get(outcomes):
        try:
            tests = dict(json.loads(files[outcomes]).get("tests", {}))
        except (json.JSONDecodeError, AttributeError):
            tests = {}
    logs = f"$ {' '.join(argv)}   [{variant}]\nexit code: {result.exit_code}" + (f" (killed: {result.killed})" if result.killed else "")
    tail = (result.stdout_tail or "")[-2500:] + (result.stderr_tail or "")[-1500:]
    return TestRun(variant, result.exit_code, result.killed, tests, bool(files.get(marker)), logs + "\n" + tail,
                   result.wall_s)


def run_tests(box: Box, submission: Submission, *, variants: tuple[str, ...]) -> TestRuns:
    """The own-code run, then the variants asked for ("percentile", "slots"), stopping each
    variant at its first failure when the own-code run passed whole."""
    own = _run(box, submission, "own code")
    runs = TestRuns(own)
    early = own.exit_code == 0
    if "percentile" in variants:
        for method in PERCENTILE_METHODS:
            runs.variants[f"percentile: {method}"] = _run(box, submission, f"percentile: {method}", method=method,
                                                          stop_early=early)
    if "slots" in variants:
        runs.variants["no slot limit"] = _run(box, submission, "no slot limit", no_slots=True, stop_early=early)
    return runs


def _caught(own: TestRun, variant: TestRun) -> tuple[bool, str]:
    if variant.killed:
        return False, f"the run was killed ({variant.killed})"
    if own.exit_code == 0:
        return (variant.exit_code != 0), ("your tests failed" if variant.exit_code != 0 else "every test still passed")
    newly = [t for t in variant.failed if own.tests.get(t) == "passed"]
    if newly:
        return True, f"{newly[0]} failed" + (f" (and {len(newly) - 1} more)" if len(newly) > 1 else "")
    return False, "no test that passes on your code failed"


def _evidence(runs: TestRuns, names: list[str], sent: str) -> Evidence:
    rows = [[name, runs.variants[name].exit_code, ", ".join(runs.variants[name].failed[:3]) or "-",
             f"{runs.variants[name].wall_s:.1f}"] for name in names]
    return Evidence(sent=sent, columns=["variant", "exit code", "failed tests", "seconds"],
                    rows=[["own code", runs.own.exit_code, ", ".join(runs.own.failed[:3]) or "-", f"{runs.own.wall_s:.1f}"], *rows],
                    logs="\n\n".join([runs.own.logs] + [runs.variants[n].logs for n in names]))


def check_pass(runs: TestRuns, criterion: Criterion) -> Verdict:
    own = runs.own
    evidence = _evidence(runs, [], "ran `loadgen.test_command` on your code")
    if own.exit_code == 0:
        return Verdict(True, f"your tests pass ({sum(v == 'passed' for v in own.tests.values())} passed)", evidence=evidence)
    named = ", ".join(own.failed[:5]) or "see the log"
    why = f"killed: {own.killed}" if own.killed else f"exit code {own.exit_code}"
    return Verdict(False, f"your tests fail on your own code ({why}); failing: {named}", evidence=evidence)


def check_percentile_chaff(runs: TestRuns, criterion: Criterion) -> Verdict:
    names = [f"percentile: {m}" for m in PERCENTILE_METHODS]
    lines, caught = [], 0
    for name in names:
        variant = runs.variants[name]
        if not variant.swapped:
            lines.append(f"{name}: not applied: your tests never imported the `loadgen.percentile` function")
            continue
        hit, why = _caught(runs.own, variant)
        caught += hit
        lines.append(f"{name}: {'caught' if hit else 'NOT caught'} ({why})")
    fraction = caught / len(names)
    evidence = _evidence(runs, names, "swapped a wrong percentile method in for your `loadgen.percentile` function")
    return Verdict(caught == len(names), f"{caught} of {len(names)} wrong methods caught\n" + "\n".join(lines),
                   fraction=fraction, evidence=evidence)


def check_slot_chaff(runs: TestRuns, criterion: Criterion) -> Verdict:
    hit, why = _caught(runs.own, runs.variants["no slot limit"])
    evidence = _evidence(runs, ["no slot limit"], "ran your tests with FAKE_SERVER_IGNORE_SLOT_LIMIT=1")
    return Verdict(hit, f"with the slot limit removed: {why}", evidence=evidence)


CHECKS: dict[str, Any] = {
    "tests.pass": (check_pass, ()),
    "tests.percentile-chaff": (check_percentile_chaff, ("percentile",)),
    "tests.slot-chaff": (check_slot_chaff, ("slots",)),
}
