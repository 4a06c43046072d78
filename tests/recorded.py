"""Recorded runs of the reference and of every chaff, for tests that judge without running anything.

`make fixtures` (this file run as a script) grades them as `grader selftest` does (each chaff on its
targets, what their runs give for free, and a sample), keeping each grade's run records in
tests/fixtures/runs/NAME/ beside `source.txt`, the digest of the submission they were made from.
The fast tier judges these records with the current rubric and criteria in milliseconds; a
fixture whose submission, scenario or case plan has changed since it was recorded is reported as
stale (record again with `make fixtures`), never judged as if it were current.
"""

from __future__ import annotations

import hashlib
import shutil
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = ROOT / "tests" / "fixtures" / "runs"
SUBMISSIONS = ROOT / "submissions"
_SKIPPED = ("__pycache__", ".pytest_cache", ".mypy_cache", ".ruff_cache")


def digest(folder: Path) -> str:
    """The sha256 of a submission's files: their paths and bytes, in path order (caches left out)."""
    h = hashlib.sha256()
    for path in sorted(p for p in folder.rglob("*") if p.is_file()):
        rel = path.relative_to(folder)
        if any(part in _SKIPPED for part in rel.parts) or path.suffix == ".pyc":
            continue
        h.update(rel.as_posix().encode() + b"\0" + path.read_bytes() + b"\0")
    return h.hexdigest()


def source_of(name: str, scratch: Path) -> Path:
    """The submission a fixture is recorded from: the reference, or a chaff built into `scratch`."""
    if name == "reference":
        return SUBMISSIONS / "reference"
    from grader.kit.chaff import list_chaff, materialize

    (chaff,) = [c for c in list_chaff(SUBMISSIONS / "chaff") if c.name == name]
    return materialize(chaff.path, scratch / name)


def record(names: tuple[str, ...] = ()) -> int:
    """Grade and keep; returns the selftest's exit status (0 when every grade came out as expected)."""
    from grader.kit.selftest import selftest

    with tempfile.TemporaryDirectory(prefix="grader-fixtures-") as tmp:
        kept = Path(tmp) / "kept"
        findings = selftest(jobs=2, names=names, keep=kept)
        for finding in findings:
            if not finding.ok:
                print(f"not recorded: {finding.name} was not graded as expected", file=sys.stderr)
                continue
            target = FIXTURES / finding.name
            shutil.rmtree(target, ignore_errors=True)
            shutil.copytree(kept / finding.name / "runs", target)
            (target / "source.txt").write_text(digest(source_of(finding.name, Path(tmp) / "src")) + "\n")
        return 0 if all(f.ok for f in findings) else 1


if __name__ == "__main__":
    sys.exit(record(tuple(sys.argv[1:])))
