"""Recorded runs of the reference and of every chaff, for tests that judge without running anything.

`make fixtures` (this file run as a script) grades them as `grader selftest` does (each chaff on its
targets, what their runs give for free, and a sample), and the independent submission
(tests/fixtures/independent_submission) on the criteria of what it implements, keeping each
grade's run records in tests/fixtures/runs/NAME/ beside `source.txt`, the digest of the submission
they were made from. The frameworks submission (tests/fixtures/frameworks_submission) is recorded as it
grades, close calls and all, for the interviewer's guide (tests/rooms/interview/test_interview_guide.py).
The fast tier judges these records with the current rubric and criteria in milliseconds; a
fixture whose submission, scenario or case plan has changed since it was recorded is reported as
stale (record again with `make fixtures`), never judged as if it were current.
"""

from __future__ import annotations

import hashlib
import json
import shutil
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = ROOT / "tests" / "fixtures" / "runs"
SUBMISSIONS = ROOT / "submissions"
#: Submissions written from TASK.md alone, by name: their folder and the deliverables they implement.
#: The kit's reference as its contract-1 bundle shipped it, graded whole: every point of its own brief.
INDEPENDENT = {
    "independent": (ROOT / "tests" / "fixtures" / "independent_submission", ("loadgen",)),
    "contract1-reference": (ROOT / "tests" / "fixtures" / "contract1_reference", ()),
}
#: Correct submissions built from the reference at recording time (tests/cold_start.py), graded on these criteria.
BUILT = {"cold-start": ("loadgen",)}
#: Submissions recorded whatever their grade says (a rerun, an inconclusive criterion): what the guide reads.
AS_GRADED = {"frameworks": (ROOT / "tests" / "fixtures" / "frameworks_submission", ("loadgen", "gateway"))}
#: Every deliverable; a correct submission recorded whole implements them all.
DELIVERABLES = ("loadgen", "tests", "gateway", "manifests", "sizing", "memo")
#: The correct submissions held to full marks, and the deliverables each implements.
CORRECT = {
    name: parts or DELIVERABLES
    for name, parts in {**{n: p for n, (_, p) in {**INDEPENDENT, **AS_GRADED}.items()}, **BUILT}.items()
}
_SKIPPED = ("__pycache__", ".pytest_cache", ".mypy_cache", ".ruff_cache")


def digest(folder: Path) -> str:
    """The sha256 of a submission's files: their paths and bytes, in path order (caches left out, and the
    starter's brief, which no grade reads)."""
    h = hashlib.sha256()
    for path in sorted(p for p in folder.rglob("*") if p.is_file()):
        rel = path.relative_to(folder)
        if any(part in _SKIPPED for part in rel.parts) or path.suffix == ".pyc" or rel.as_posix() == "TASK.md":
            continue
        h.update(rel.as_posix().encode() + b"\0" + path.read_bytes() + b"\0")
    return h.hexdigest()


def source_of(name: str, scratch: Path) -> Path:
    """The submission a fixture is recorded from: the reference, or a chaff built into `scratch`."""
    if name == "reference":
        return SUBMISSIONS / "reference"
    if name in INDEPENDENT or name in AS_GRADED:
        return {**INDEPENDENT, **AS_GRADED}[name][0]
    if name == "cold-start":
        from cold_start import build

        return build(scratch / name) if not (scratch / name).exists() else scratch / name
    from grader.kit.chaff import list_chaff, materialize

    (chaff,) = [c for c in list_chaff(SUBMISSIONS / "chaff") if c.name == name]
    return materialize(chaff.path, scratch / name)


def portable(index: Path, name: str) -> None:
    """Write the index's paths as the repository names them, so a fixture reads the same on any machine."""
    data = json.loads(index.read_text())
    rubric = Path(data["rubric"])
    data["rubric"] = rubric.relative_to(ROOT).as_posix() if rubric.is_relative_to(ROOT) else rubric.name
    data["submission"] = "submissions/reference" if name == "reference" else f"submissions/chaff/{name}"
    if name in INDEPENDENT or name in AS_GRADED:
        data["submission"] = {**INDEPENDENT, **AS_GRADED}[name][0].relative_to(ROOT).as_posix()
    if name in BUILT:
        data["submission"] = f"tests/{name.replace('-', '_')}.py"
    index.write_text(json.dumps(data, indent=1, sort_keys=True) + "\n")


def live_statuses(report_dir: Path) -> dict[str, str]:
    """Each criterion's status in a live grade's report.json."""
    report = json.loads((report_dir / "report.json").read_text())
    return {c["id"]: c["status"] for c in report["extra_data"]["kit"]["criteria"]}


def differences_from_recording(name: str, live: dict[str, str]) -> dict[str, str]:
    """Criteria whose live status is not what the recording of `name` gives today (undecided ones left out)."""
    from grader.grading.rejudge import grade_of
    from grader.records.book import RecordBook
    from grader.rubric import load_rubric

    recorded = {c.id: c.status for c in grade_of(RecordBook.read(FIXTURES / name), load_rubric()).criteria}
    both = [i for i in live if i in recorded and "inconclusive" not in (live[i], recorded[i])]
    assert both, f"{name}: no criterion decided both live and in its recording"
    return {i: f"live {live[i]}, recorded {recorded[i]}" for i in both if live[i] != recorded[i]}


def _keep(name: str, runs: Path, scratch: Path) -> None:
    target = FIXTURES / name
    shutil.rmtree(target, ignore_errors=True)
    shutil.copytree(runs, target)
    portable(target / "index.json", name)
    (target / "source.txt").write_text(digest(source_of(name, scratch)) + "\n")


def record(names: tuple[str, ...] = ()) -> int:
    """Grade and keep; returns 1 when a grade did not come out as expected (it is then not recorded)."""
    from grader.grading.grade import GradeRequest, grade
    from grader.kit.selftest import selftest

    ok = True
    with tempfile.TemporaryDirectory(prefix="grader-fixtures-") as tmp:
        kept, scratch = Path(tmp) / "kept", Path(tmp) / "src"
        wanted = tuple(n for n in names if n not in INDEPENDENT and n not in AS_GRADED and n not in BUILT)
        if wanted or not names:
            for finding in selftest(jobs=2, names=wanted, keep=kept):
                if finding.ok:
                    _keep(finding.name, kept / finding.name / "runs", scratch)
                else:
                    ok = False
                    print(f"not recorded: {finding.name} was not graded as expected", file=sys.stderr)
        whole = {name: (folder, parts) for name, (folder, parts) in INDEPENDENT.items()}
        whole |= {
            name: (source_of(name, scratch), parts) for name, parts in BUILT.items() if not names or name in names
        }
        for name, (folder, parts) in whole.items():
            if names and name not in names:
                continue
            result = grade(GradeRequest(folder, kept / name, only=parts, echo=lambda _: None))
            if result.score == result.max_score:
                _keep(name, kept / name / "runs", scratch)
                print(f"ok   {name:<28} {result.score:g}/{result.max_score:g}")
            else:
                ok = False
                print(f"not recorded: {name} scored {result.score:g}/{result.max_score:g}", file=sys.stderr)
        for name, (folder, parts) in AS_GRADED.items():
            if names and name not in names:
                continue
            result = grade(GradeRequest(folder, kept / name, only=parts, echo=lambda _: None, sandboxes=2))
            _keep(name, kept / name / "runs", scratch)
            print(f"kept {name:<28} {result.score:g}/{result.max_score:g} (as graded)")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(record(tuple(sys.argv[1:])))
