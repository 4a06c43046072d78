"""Benchmarks of the kit; each records its figures, side by side, with the command that made them."""

from __future__ import annotations

import argparse
import os
import tempfile
from pathlib import Path

__all__ = ["add_keep_option", "results_dir"]


def results_dir() -> Path:
    """Where a benchmark writes its figures: bench/results/, or the folder BENCH_RESULTS names (a smoke
    run's own, so that trying an entry point never overwrites the recorded figures)."""
    folder = Path(os.environ.get("BENCH_RESULTS") or Path(__file__).resolve().parent / "results")
    folder.mkdir(parents=True, exist_ok=True)
    return folder


def add_keep_option(parser: argparse.ArgumentParser, folder: str) -> None:
    """`--keep DIR`: where a grade that did not pass every criterion keeps its reports and run records (default
    $TMPDIR/FOLDER), so what failed can be read after the run."""
    parser.add_argument(
        "--keep",
        type=Path,
        default=Path(tempfile.gettempdir()) / folder,
        help="where a grade that did not pass every criterion keeps its reports and run records",
    )
