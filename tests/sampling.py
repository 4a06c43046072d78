"""A run of the suite grades a sample of its longest parametrized end-to-end tests, drawn by one seed.

Some end-to-end tests repeat one minute-long live grade per chaff, exercise or replay. Each run of
`make test` keeps `n` of a test's parameters, marked `@pytest.mark.sampled(n)`, drawn by `SUITE_SEED` (a
fresh one each run unless given), and names what it drew and the seed at the end of its output, so that
`SUITE_SEED=N make test` draws the same again and over many runs every parameter is run. Each parameter's
verdicts are also checked every run from its recording in the fast tier. The heaviest single tests (the
offline bundle, a round's grade-many, a browser's review, ...), marked `rotating(seconds)` with their time
under the suite's load, take turns: their files are dealt into six turns of about the same cost, and the
seed picks the turn a run makes, each file whole. `SUITE_FULL=1` (`make test-full`)
runs every parameter and every file, and a run of some tests by name (`pytest tests/kit/test_bundle.py`)
runs them all.

The seed is chosen once, by the process that starts the run, and handed to xdist's workers through the
environment: every worker must collect the same tests.
"""

from __future__ import annotations

import os
import random
import secrets
from collections import defaultdict

import pytest

__all__ = ["suite_seed"]

SEED = "SUITE_SEED"
FULL = "SUITE_FULL"
ROTATION = 6  # a file of `rotating` tests runs in one run in this many


def suite_seed() -> int:
    """The run's seed (SUITE_SEED), which draws every sample the suite makes."""
    given = os.environ.get(SEED, "")
    if not given.isdigit():
        raise pytest.UsageError(f"{SEED} must be a whole number, not {given!r}")
    return int(given)


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers", "sampled(n): run n of this parametrized test's parameters, drawn by SUITE_SEED (all: SUITE_FULL=1)"
    )
    config.addinivalue_line(
        "markers",
        "rotating(seconds): one of the heaviest tests, its file run in one run of the suite in six",
    )
    if not hasattr(config, "workerinput"):  # the controller (or a run without xdist) chooses for every worker
        os.environ.setdefault(SEED, str(secrets.randbelow(2**31)))
    suite_seed()  # a malformed SUITE_SEED stops the run here, by name


def draw(function: str, params: list[str], n: int, seed: int) -> list[str]:
    """`n` of a test's parameters, drawn by the seed and the test's name alone (not by collection order)."""
    ordered = sorted(params)
    return sorted(random.Random(f"{seed}:{function}").sample(ordered, min(n, len(ordered))))


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if os.environ.get(FULL) == "1" or config.args_source != pytest.Config.ArgsSource.TESTPATHS:
        return  # every parameter and every file: asked for, or a run of some tests by name
    groups: dict[str, list[pytest.Item]] = defaultdict(list)
    rotating: dict[str, list[pytest.Item]] = defaultdict(list)
    for item in items:
        if item.get_closest_marker("sampled") is not None and hasattr(item, "callspec"):
            groups[item.nodeid.split("[")[0]].append(item)
        if item.get_closest_marker("rotating") is not None:
            rotating[item.nodeid.split("::")[0]].append(item)
    seed, left_out = suite_seed(), []
    for function, group in groups.items():
        marker = group[0].get_closest_marker("sampled")
        assert marker is not None and marker.args, f"{function}: sampled(n) needs n"
        keep = set(draw(function, [_param(item) for item in group], int(marker.args[0]), seed))
        left_out += [item for item in group if _param(item) not in keep]
    if rotating:
        kept = turns(rotating)[seed % ROTATION]
        left_out += [item for path, group in rotating.items() if path not in kept for item in group]
    if left_out:
        config.hook.pytest_deselected(items=left_out)
        gone = set(map(id, left_out))
        items[:] = [item for item in items if id(item) not in gone]


def turns(rotating: dict[str, list[pytest.Item]]) -> list[set[str]]:
    """The files of `rotating` tests dealt into ROTATION turns of about the same cost (each test's
    `rotating(seconds)`, its time under the suite's load), the costliest first, each to the lightest turn so far:
    whichever turn a run draws, it costs about the same."""
    seconds = {  # a test's seconds once, however many parameters it has (its time is theirs together)
        item.nodeid.split("[")[0]: _seconds(item) for group in rotating.values() for item in group
    }
    cost = {path: sum(s for test, s in seconds.items() if test.startswith(f"{path}::")) for path in rotating}
    dealt: list[tuple[float, set[str]]] = [(0.0, set()) for _ in range(ROTATION)]
    for path in sorted(cost, key=lambda p: (-cost[p], p)):
        lightest = min(range(ROTATION), key=lambda i: (dealt[i][0], i))
        dealt[lightest] = (dealt[lightest][0] + cost[path], dealt[lightest][1] | {path})
    return [files for _, files in dealt]


def _seconds(item: pytest.Item) -> float:
    marker = item.get_closest_marker("rotating")
    if marker is None or len(marker.args) != 1 or not isinstance(marker.args[0], (int, float)):
        raise pytest.UsageError(f"{item.nodeid}: rotating(seconds) takes its time under load, in seconds")
    return float(marker.args[0])


def _param(item: pytest.Item) -> str:
    return str(item.callspec.id)  # type: ignore[attr-defined]


def pytest_runtest_setup(item: pytest.Item) -> None:
    """Mark a drawn test's report, so the run's summary (xdist's controller collects nothing) can name it."""
    if (item.get_closest_marker("sampled") is not None and hasattr(item, "callspec")) or item.get_closest_marker(
        "rotating"
    ) is not None:
        item.user_properties.append(("sampled", item.nodeid))


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter, config: pytest.Config) -> None:
    if config.args_source != pytest.Config.ArgsSource.TESTPATHS:
        return  # tests run by name: nothing was drawn
    if os.environ.get(FULL) == "1":
        terminalreporter.write_line(f"every parameter of the sampled tests was run ({FULL}=1)")
        return
    ran = sorted(
        {
            value
            for reports in terminalreporter.stats.values()
            for report in reports
            for key, value in getattr(report, "user_properties", ())
            if key == "sampled"
        }
    )
    terminalreporter.write_line(f"drawn with {SEED}={suite_seed()} (every parameter: {FULL}=1):")
    for nodeid in ran:
        terminalreporter.write_line(f"  {nodeid}")
