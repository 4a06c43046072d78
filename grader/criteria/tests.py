"""The candidate's own tests: they must pass on the candidate's code and fail on the chaff.

A variant (running/tests.py) is caught when a test that passed on the candidate's own code fails
under it.
"""

from __future__ import annotations

from grader.criteria.registry import check
from grader.criteria.verdict import Verdict, with_unseen
from grader.outcome import Evidence
from grader.records.tests import (
    DRAWN_NO_SLOTS,
    DRAWN_SERVER,
    NO_SLOTS,
    PERCENTILE_METHODS,
    UNSEEN_PERCENTILE,
    TestRun,
    TestRuns,
)
from grader.rubric import Criterion

__all__: list[str] = []  # the checks are found through the registry


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
    rows = [
        [
            name,
            runs.variants[name].exit_code,
            ", ".join(runs.variants[name].failed[:3]) or "-",
            f"{runs.variants[name].wall_s:.1f}",
        ]
        for name in names
    ]
    return Evidence(
        sent=sent,
        columns=["variant", "exit code", "failed tests", "seconds"],
        rows=[["own code", runs.own.exit_code, ", ".join(runs.own.failed[:3]) or "-", f"{runs.own.wall_s:.1f}"], *rows],
        logs="\n\n".join([runs.own.logs] + [runs.variants[n].logs for n in names]),
    )


#: A failing suite's margin: a fail that stands on a quiet machine and earns a rerun on a busy one.
FAILED_SUITE = 2.0


@check("tests", "tests.pass")
def check_pass(runs: TestRuns, criterion: Criterion) -> Verdict:
    own = runs.own
    evidence = _evidence(runs, [], "ran `loadgen.test_command` on your code")
    passed = sum(v == "passed" for v in own.tests.values())
    if own.exit_code == 0 and passed:
        return Verdict(True, f"your tests pass ({passed} passed)", evidence=evidence)
    if own.exit_code == 0:
        skipped = sum(v == "skipped" for v in own.tests.values())
        return Verdict(
            False,
            f"no test ran to a pass ({skipped} skipped, 0 passed): a command that tests nothing "
            "has nothing to judge (the grader reads each test's outcome from pytest)",
            evidence=evidence,
        )
    named = ", ".join(own.failed[:5]) or "see the log"
    why = f"killed: {own.killed}" if own.killed else f"exit code {own.exit_code}"
    # A timing test can fail on a machine too busy to keep time: past the quiet band (it stands there), inside the
    # busy one (a busy run is made again; grading/judging.py).
    return Verdict(
        False, f"your tests fail on your own code ({why}); failing: {named}", margin=FAILED_SUITE, evidence=evidence
    )


@check("tests", "tests.percentile-chaff")
def check_percentile_chaff(runs: TestRuns, criterion: Criterion) -> Verdict:
    """The brief's wrong methods, scored by the share caught; the unseen ones the grade drew judged apart, the
    criterion scoring the lower share (a suite fitted to the named four lets others through)."""
    names = [f"percentile: {m}" for m in PERCENTILE_METHODS]
    evidence = _evidence(runs, names, "swapped a wrong percentile method in for your `loadgen.percentile` function")
    public = _methods_caught(runs, {name: runs.variants[name] for name in names}, evidence)
    unseen = runs.unseen_percentiles
    if not unseen:
        return public
    hidden = _evidence(
        runs, [f"{UNSEEN_PERCENTILE}{n}" for n in unseen], "swapped wrong methods the brief does not name"
    )
    return with_unseen(public, _methods_caught(runs, unseen, hidden))


def _methods_caught(runs: TestRuns, methods: dict[str, TestRun], evidence: Evidence) -> Verdict:
    lines, caught = [], 0
    for name, variant in methods.items():
        if not variant.swapped:
            lines.append(f"{name}: not applied: your tests never imported the `loadgen.percentile` function")
            continue
        hit, why = _caught(runs.own, variant)
        caught += hit
        lines.append(f"{name}: {'caught' if hit else 'NOT caught'} ({why})")
    return Verdict(
        caught == len(methods),
        f"{caught} of {len(methods)} wrong methods caught\n" + "\n".join(lines),
        fraction=caught / len(methods),
        evidence=evidence,
    )


@check("tests", "tests.slot-chaff")
def check_slot_chaff(runs: TestRuns, criterion: Criterion) -> Verdict:
    """The published run (slot limit removed), and in a grade the slot tests it caught against drawn servers: they
    must pass there (a test that assumes the slots and rate it asked for fails), then fail without the slot limit."""
    hit, why = _caught(runs.own, runs.variants[NO_SLOTS])
    evidence = _evidence(runs, [NO_SLOTS], "ran your tests with FAKE_SERVER_IGNORE_SLOT_LIMIT=1")
    public = Verdict(hit, f"with the slot limit removed: {why}", evidence=evidence)
    if "drawn-slots" not in criterion.variants or DRAWN_SERVER not in runs.variants:
        return public
    return with_unseen(public, _drawn_servers(runs))


def _drawn_servers(runs: TestRuns) -> Verdict:
    slot_tests = runs.slot_tests
    drawn, drawn_no_slots = runs.variants[DRAWN_SERVER], runs.variants[DRAWN_NO_SLOTS]
    evidence = _evidence(
        runs,
        [DRAWN_SERVER, DRAWN_NO_SLOTS],
        "ran your slot tests against servers whose slots and token rate were drawn",
    )
    if drawn.killed:
        return Verdict(False, f"against drawn servers the run was killed ({drawn.killed})", evidence=evidence)
    wrong = [t for t in slot_tests if drawn.tests.get(t) != "passed"]
    if wrong:
        more = f" (and {len(wrong) - 1} more)" if len(wrong) > 1 else ""
        return Verdict(
            False,
            f"{wrong[0]}{more} did not pass against a server whose slots and token rate were drawn: a slot test "
            "reads the slots and rate its server has (`server.settings()`), not the ones it asked for",
            margin=FAILED_SUITE,  # a timing test on a busy machine: judged again there, standing on a quiet one
            evidence=evidence,
        )
    if drawn_no_slots.killed:
        why = f"against drawn servers with the slot limit removed the run was killed ({drawn_no_slots.killed})"
        return Verdict(False, why, evidence=evidence)
    caught = [t for t in slot_tests if drawn_no_slots.tests.get(t) == "failed"]
    if not caught:
        return Verdict(
            False, "against drawn servers with the slot limit removed, your slot tests still passed", evidence=evidence
        )
    return Verdict(
        True,
        f"against drawn servers your slot tests pass, and {caught[0]} fails with the slot limit removed",
        evidence=evidence,
    )
