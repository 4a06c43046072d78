"""The grader's command line run as a person runs it from the kit's checkout, for the tests that grade for real."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from kit_paths import ROOT

__all__ = ["run_grader"]


def run_grader(
    *args: object, timeout: float = 120, cwd: Path = ROOT, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    """`python -m grader.cli ARGS` (each argument as its str): its exit code and output, never raising on either."""
    return subprocess.run(
        [sys.executable, "-m", "grader.cli", *map(str, args)],
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
        cwd=cwd,
        env=env,
    )
