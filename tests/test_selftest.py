"""`grader selftest`: the reference gets full marks and every chaff loses exactly its criteria.

This is the proof that the grader grades right, run in CI. The second test shows the selftest
itself can fail: a chaff whose edit changes nothing is caught keeping the criterion it names.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from grader.kit.selftest import selftest

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parent.parent


def test_the_reference_scores_full_marks_and_every_chaff_loses_exactly_its_targets():
    # Three grades at once, beside the other test workers: a grade mostly waits on token clocks and
    # timeouts; a chaff whose timing the busy machine blurs is rerun, then listed as inconclusive.
    done = subprocess.run([sys.executable, "-m", "grader.cli", "selftest", "--jobs", "3"], cwd=ROOT,
                          capture_output=True, text=True, timeout=2400, check=False)
    assert done.returncode == 0, done.stdout[-6000:] + done.stderr[-3000:]
    assert "graded as expected" in done.stdout
    assert "ok   reference" in done.stdout


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
