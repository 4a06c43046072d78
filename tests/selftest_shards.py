"""`grader selftest` in three shares, one test file each, so that the test workers share it."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

from grader.kit.chaff import list_chaff

ROOT = Path(__file__).resolve().parent.parent
SHARDS = 3


def graded_as_expected(index: int) -> None:
    """Run one shard through the CLI, two grades at once, and check it named exactly its share."""
    done = subprocess.run(
        [sys.executable, "-m", "grader.cli", "selftest", "--jobs", "2", "--shard", f"{index}/{SHARDS}"],
        cwd=ROOT, capture_output=True, text=True, timeout=1800, check=False,
    )
    assert done.returncode == 0, done.stdout[-6000:] + done.stderr[-3000:]
    everyone = ["reference"] + [c.name for c in list_chaff(ROOT / "submissions" / "chaff")]
    share = everyone[index - 1 :: SHARDS]
    graded = re.findall(r"^(?:ok  |FAIL) (\S+)", done.stdout, flags=re.MULTILINE)  # as each grade ends
    assert sorted(graded) == sorted(share), done.stdout[-3000:]
    assert f"{len(share)} of {len(share)} graded as expected" in done.stdout
