"""Every benchmark's entry point runs whole on its smallest setting and writes its figures with the command that
made them, into a folder of its own (BENCH_RESULTS), so a bench nobody ran for a while cannot rot unseen and a
try never overwrites the figures bench/README.md quotes."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from kit_paths import ROOT

pytestmark = pytest.mark.slow

#: module, its smallest setting, the file it writes
ENTRY_POINTS = [
    # beside the suite the machine is busy: the timing benches take one try, not a wait for quiet before
    # each of four more (up to 15 minutes each)
    (
        "fidelity",
        ["--quick", "--loads", "16", "--modes", "auto", "--max-tokens", "10", "--tries", "1"],
        "fidelity-quick.json",
    ),
    ("cpu", ["--rates", "20", "--seconds", "1", "--tries", "1"], "cpu.json"),
    ("loadgen_ttft", ["--loads", "1", "--max-tokens", "8"], "loadgen_ttft.json"),
    # the grading benches on the manifests alone: the same path through the grade, none of a candidate's runs
    ("grade_time", ["--repeat", "1", "--only", "manifests"], "grade_time.json"),
    ("hang", ["--only", "manifests"], "hang.json"),
    ("loaded", ["--no-selftest", "--only", "manifests"], "loaded.json"),
    ("rejudge", ["--grades", "2"], "rejudge.json"),
    ("replay", ["--only", "manifests-no-gpu"], "replay.json"),
    ("beside_hogs", ["--grades", "1", "--hogs", "1", "--only", "manifests"], "beside_hogs.json"),
    ("round", ["--sizes", "4"], "round.json"),
    ("corners", ["--clients", "reference", "--hogs", "0", "--corners", "1"], "corners.json"),
    ("grade_walk", ["--only", "manifests"], "grade_walk.json"),
    # the soak measures flatness only once the ledger's kept records are full: a short one keeps few
    # long enough for the ledger to fill (its keep + 500 requests) with a window after it, on a loaded machine
    ("soak", ["--minutes", "0.4", "--workers", "2", "--ledger-keep", "20"], "soak.json"),
]


def test_every_entry_point_is_listed() -> None:
    """A new benchmark is run here too: every module of bench/ that records figures is an entry point above (the
    fidelity bench's client and naive server are processes it starts, not benchmarks)."""
    runnable = {
        p.stem
        for p in (ROOT / "bench").glob("*.py")
        if "def main(" in (text := p.read_text(encoding="utf-8")) and ("RESULTS" in text or "results_dir" in text)
    }
    assert runnable == {name for name, _, _ in ENTRY_POINTS}


@pytest.mark.sampled(4)  # a sample each run (tests/sampling.py)
@pytest.mark.rotating(53)
@pytest.mark.parametrize(("module", "args", "written"), ENTRY_POINTS, ids=[e[0] for e in ENTRY_POINTS])
def test_the_entry_point_runs_on_its_smallest_setting(
    module: str, args: list[str], written: str, tmp_path: Path
) -> None:
    recorded = {p.name: p.read_bytes() for p in (ROOT / "bench" / "results").glob("*.json")}
    done = subprocess.run(
        [sys.executable, "-m", f"bench.{module}", *args],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
        env={**os.environ, "BENCH_RESULTS": str(tmp_path)},
    )
    assert done.returncode == 0 and "Traceback" not in done.stderr, done.stderr[-3000:]
    result = json.loads((tmp_path / written).read_text())
    assert result["command"].startswith(f"python -m bench.{module}")
    # the recorded figures are untouched
    assert {p.name: p.read_bytes() for p in (ROOT / "bench" / "results").glob("*.json")} == recorded
