"""`grader selftest`: the reference gets full marks and every chaff loses exactly its criteria.

This is the proof that the grader grades right, run in CI in three shares (this file has the first;
tests/selftest_shards.py runs them). The second test shows the selftest
itself can fail: a chaff whose edit changes nothing is caught keeping the criterion it names.
"""

from __future__ import annotations

import shutil

import pytest
from kit_paths import ROOT
from selftest_shards import graded_as_expected

from grader.kit.selftest import selftest

pytestmark = pytest.mark.slow



def test_the_reference_scores_full_marks_and_every_chaff_of_the_first_share_loses_exactly_its_targets():
    # The first of three shares (tests/selftest_shards.py), the reference among them; each share grades
    # two at once beside the other test workers. A chaff whose timing the busy machine blurs is rerun,
    # then listed as inconclusive.
    graded_as_expected(1)


def test_a_chaff_that_keeps_its_target_is_reported_wrong(tmp_path):
    root = tmp_path / "submissions"
    shutil.copytree(ROOT / "submissions" / "reference", root / "reference",
                    ignore=shutil.ignore_patterns("__pycache__", ".pytest_cache"))
    chaff = root / "chaff" / "harmless"
    chaff.mkdir(parents=True)
    (chaff / "chaff.yaml").write_text(
        "base: reference\n"
        "defect: a comment changed, nothing else\n"
        "targets: [loadgen.role-chunk]\n"
        "edits:\n"
        "  - file: submission.yaml\n"
        "    find: 'contract: 1'\n"
        "    replace: 'contract: 1  # unchanged'\n")
    lines: list[str] = []
    (finding,) = selftest(names=("harmless",), root=root, echo=lines.append, jobs=1)
    assert not finding.ok
    assert any("loadgen.role-chunk: should be lost, but passed" in line for line in finding.lines)
