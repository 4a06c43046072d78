"""Benchmarks of the kit; each records its figures, side by side, with the command that made them."""

from __future__ import annotations

import os
from pathlib import Path

__all__ = ["results_dir"]


def results_dir() -> Path:
    """Where a benchmark writes its figures: bench/results/, or the folder BENCH_RESULTS names (a smoke
    run's own, so that trying an entry point never overwrites the recorded figures)."""
    folder = Path(os.environ.get("BENCH_RESULTS") or Path(__file__).resolve().parent / "results")
    folder.mkdir(parents=True, exist_ok=True)
    return folder
