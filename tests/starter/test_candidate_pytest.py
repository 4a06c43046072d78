"""The candidate's tests run with the plugins of the candidate's kit and no others.

The machine that grades may have more pytest plugins installed than a candidate's kit: this one has
hypothesis's and schemathesis's (the kit's own test extra). Loaded into a candidate's run, such a
plugin could change its outcome (pytest-randomly reorders tests) and costs every run time: here a
second and a half of CPU per pytest start, several starts per grade. The grader's runs load
exactly the kit's: the fake server's fixtures and anyio's.
"""

from __future__ import annotations

import shutil
from importlib.metadata import entry_points
from pathlib import Path

import pytest
from kit_paths import ROOT

from grader.contract import load_submission
from grader.running.tests import run_tests
from grader.sandbox import Sandbox

_PLUGINS_TEST = """\
def test_only_the_kits_plugins(pytestconfig, fake_server):
    names = {name for name, plugin in pytestconfig.pluginmanager.list_name_plugin() if plugin is not None}
    others = {name for name in names if "hypothesis" in name or "schemathesis" in name or "xdist" in name}
    assert not others, sorted(others)
    assert pytestconfig.pluginmanager.has_plugin("fake_server.pytest_plugin")
    assert pytestconfig.pluginmanager.has_plugin("anyio.pytest_plugin")
"""


@pytest.mark.skipif(
    not {"hypothesispytest", "xdist"} <= {ep.name for ep in entry_points(group="pytest11")},
    reason="shows a plugin of the grading machine left out: needs one installed here",
)
def test_a_candidates_tests_see_the_kits_plugins_and_not_the_grading_machines(tmp_path: Path) -> None:
    folder = tmp_path / "submission"
    shutil.copytree(ROOT / "submissions" / "reference", folder, ignore=shutil.ignore_patterns("__pycache__"))
    shutil.rmtree(folder / "loadgen" / "tests")
    (folder / "loadgen" / "tests").mkdir()
    (folder / "loadgen" / "tests" / "test_plugins.py").write_text(_PLUGINS_TEST)
    submission = load_submission(folder)
    with Sandbox(folder) as box:
        runs = run_tests(box, submission, variants=(), limits={"own_s": 60, "per_own": 3, "min_s": 15})
    assert runs.own.exit_code == 0, runs.own.logs
    assert runs.own.tests == {"loadgen/tests/test_plugins.py::test_only_the_kits_plugins": "passed"}, runs.own.logs
