"""The synthetic round (tests/round_builder.py) through `grader grade-many`: every disguised copy flagged
against what it copied, the independent work and the skeleton not, an anonymized copy naming nobody;
and a round graded for real as a Kubernetes Job's pods would, merged, compared the same way."""

from __future__ import annotations

import csv
import json
import subprocess
from pathlib import Path

import pytest
from grader_cli import run_grader
from round_builder import CODE_FOLDERS, Member, build_round

THRESHOLD = 0.5


def _grader(*args: object, timeout: float = 300) -> subprocess.CompletedProcess[str]:
    done = run_grader(*args, timeout=timeout)
    assert done.returncode == 0, done.stderr
    return done


def _pairs(out: Path) -> dict[tuple[str, str, str], float]:
    with (out / "similarity.csv").open(newline="") as f:
        return {(r["a"], r["b"], r["deliverable"]): float(r["score"]) for r in csv.DictReader(f)}


def _leak(pairs: dict[tuple[str, str, str], float], a: str, deliverable: str) -> float:
    """Its closest leak: the reference, or a chaff (the reference with one edit), whichever is closer."""
    return max(
        (
            s
            for (x, b, d), s in pairs.items()
            if x == a and d == deliverable and (b == "reference" or b.startswith("chaff/"))
        ),
        default=0.0,
    )


def _score(pairs: dict[tuple[str, str, str], float], a: str, b: str, deliverable: str) -> float:
    return pairs.get((a, b, deliverable), pairs.get((b, a, deliverable), 0.0))


@pytest.fixture(scope="module")
def synthetic(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, Member]]:
    root = tmp_path_factory.mktemp("round")
    members = build_round(root, size=20)
    _grader(
        "grade-many",
        "--merge",
        root / "grades",
        "--out",
        root / "grades",
        "--anonymize",
        "--jobs",
        "2",
        "--reveal",
        root / "names.csv",
    )
    return root, members


@pytest.mark.slow
@pytest.mark.rotating(69)
def test_every_disguised_copy_is_flagged_against_what_it_copied(synthetic: tuple[Path, dict[str, Member]]) -> None:
    root, members = synthetic
    assert len(members) >= 20
    pairs = _pairs(root / "grades")
    original = next(m.name for m in members.values() if m.kind == "independent")
    for m in members.values():
        if m.kind == "disguised":
            for part in CODE_FOLDERS:  # the kit's reference, as a leak
                assert _leak(pairs, m.name, part) >= THRESHOLD, (m, part)
        elif m.kind == "gateway-copy":
            assert _leak(pairs, m.name, "gateway") >= THRESHOLD
        elif m.kind == "independent-copy":
            assert _score(pairs, m.name, original, "loadgen") >= THRESHOLD, m
    copies = [m.name for m in members.values() if m.kind == "independent-copy"]
    assert _score(pairs, copies[0], copies[1], "loadgen") >= THRESHOLD
    grades = {r["name"]: r for r in csv.DictReader((root / "grades" / "grades.csv").open())}
    assert all(float(grades[m.name]["similarity"]) >= THRESHOLD for m in members.values() if m.copied)
    disguised = next(m.name for m in members.values() if m.kind == "disguised")
    index = (root / "grades" / "index.html").read_text()
    link = next(
        f"similarity/{disguised}--{b.replace('/', '-')}.html"
        for (a, b, _), s in pairs.items()
        if a == disguised and s >= THRESHOLD
    )
    assert link in index and "<mark>" in (root / "grades" / link).read_text()


@pytest.mark.slow
@pytest.mark.rotating(1)
def test_honest_work_and_the_skeleton_are_not_flagged(synthetic: tuple[Path, dict[str, Member]]) -> None:
    root, members = synthetic
    pairs = _pairs(root / "grades")
    independent = next(m.name for m in members.values() if m.kind == "independent")
    skeleton = next(m.name for m in members.values() if m.kind == "skeleton")
    gateway_copy = next(m.name for m in members.values() if m.kind == "gateway-copy")
    for (a, b, part), score in pairs.items():
        if independent in (a, b) and (
            b == "reference"
            or b.startswith("chaff/")
            or members.get(b if a == independent else a, members[independent]).copied == "reference"
        ):
            assert score < THRESHOLD, (a, b, part, score)
        assert skeleton not in (a, b), (a, b, part)  # nothing of its own once the starter's text is set aside
        if gateway_copy in (a, b):  # its other deliverables are the skeleton
            assert part == "gateway", (a, b, part)


@pytest.mark.slow
@pytest.mark.rotating(3)
def test_the_anonymized_round_names_no_candidate(synthetic: tuple[Path, dict[str, Member]]) -> None:
    root, members = synthetic
    blind = root / "grades" / "blind"
    names = {n for m in members.values() for n in (m.name, m.candidate, m.name.replace("-", "."))}
    files = [p for p in blind.rglob("*") if p.is_file()]
    assert len(files) > len(members) * 3
    for path in files:
        text = path.read_text(encoding="utf-8").lower()
        for name in names:
            assert name.lower() not in text, f"{path} names {name}"
    named = (root / "grades" / members[next(iter(members))].name / "report.html").read_text()
    assert members[next(iter(members))].candidate in named  # the names were there to be removed
    revealed = {r["name"] for r in csv.DictReader((root / "names.csv").open())}
    assert revealed == set(members)


@pytest.mark.slow
@pytest.mark.rotating(41)
def test_a_round_graded_by_job_pods_and_merged_is_compared_as_a_local_one(tmp_path: Path) -> None:
    """Three submissions graded for real (manifests only), each by `--index` as one pod of the Job, into
    separate report folders; merged, the disguised copy is flagged against the reference."""
    members = build_round(tmp_path / "built", size=11)
    chosen = [m for m in members.values() if m.kind in ("disguised", "independent", "skeleton")][:3]
    listed = [tmp_path / "built" / "submissions" / m.name for m in chosen]  # as the Job lists them
    for index in range(3):
        _grader(
            "grade-many", "--out", tmp_path / f"pod-{index}", "--index", index, "--only", "manifests", "--", *listed
        )
    _grader("grade-many", "--merge", *(tmp_path / f"pod-{i}" for i in range(3)), "--out", tmp_path / "grades")
    for m in chosen:
        assert (tmp_path / "grades" / m.name / "sources.json.gz").is_file()
    pairs = _pairs(tmp_path / "grades")
    disguised = next(m.name for m in chosen if m.kind == "disguised")
    assert _leak(pairs, disguised, "gateway") >= THRESHOLD
    assert json.loads((tmp_path / "grades" / disguised / "report.json").read_text())["extra_data"]["kit"]["criteria"]
