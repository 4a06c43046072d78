"""`grade-many --against PAST_ROUND`: a round compared with earlier rounds' submissions, from the sources their
report folders kept; a copy is flagged with the past candidate's name, or their code if that round was blind."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from grader_cli import run_grader
from round_builder import ROOT, disguise

from grader.round.leaks import CODES, leak_corpus, past_round
from grader.round.similarity import SimilarityError, compare
from grader.round.sources import Deliverable, Sources, snapshot, write_sources

REFERENCE = ROOT / "submissions" / "reference"


def _sizing(folder: Path) -> Sources:
    """A submission's sizing code alone (three files: the test tokenises little)."""
    files = {p.relative_to(folder).as_posix(): p.read_text() for p in sorted((folder / "sizing").glob("*.py"))}
    return Sources("", {"sizing": Deliverable("sizing/", files)})


def _past_round(tmp_path: Path, *, blind: bool) -> Path:
    """An earlier round's --out: alice handed in the reference's sizing; her report folder kept its sources."""
    past = tmp_path / "round-2026-q3"
    for name, folder in (("alice", REFERENCE), ("bob", ROOT / "starter")):
        (past / name).mkdir(parents=True)
        write_sources(_sizing(folder), past / name)
    if blind:
        (past / CODES).write_text(json.dumps({"alice": "C-7QK2", "bob": "C-M4XP"}))
    return past


@pytest.mark.parametrize("blind", [False, True])
def test_a_copy_of_a_past_rounds_submission_is_flagged_with_that_candidate(tmp_path: Path, blind: bool) -> None:
    past = _past_round(tmp_path, blind=blind)
    copied = tmp_path / "carol"
    shutil.copytree(REFERENCE / "sizing", copied / "sizing", ignore=shutil.ignore_patterns("__pycache__"))
    disguise(copied, ("rename", "recomment"), folders=("sizing",))
    corpus, note = leak_corpus(kit=False, against=[past])
    assert "the 2 submission(s) of the earlier round round-2026-q3" in note
    result = compare({"carol": _sizing(copied), "dave": _sizing(ROOT / "starter")}, corpus)
    flagged = {(p.a, p.b) for p in result.flagged()}
    alice = "past/round-2026-q3/" + ("C-7QK2" if blind else "alice")
    assert ("carol", alice) in flagged
    assert all("dave" not in pair for pair in flagged)  # the skeleton copies nobody
    if blind:  # a blind round's names stay out
        assert not any("alice" in p.b or "bob" in p.b for p in result.pairs)


def test_a_past_round_that_kept_no_sources_is_refused_naming_it(tmp_path: Path) -> None:
    (tmp_path / "old" / "alice").mkdir(parents=True)
    with pytest.raises(SimilarityError, match=r"--against .*old: no report folder there keeps its sources"):
        past_round(tmp_path / "old")
    with pytest.raises(SimilarityError, match="no such folder"):
        past_round(tmp_path / "missing")


def test_a_past_round_is_read_from_what_grade_many_keeps(tmp_path: Path) -> None:
    """The kept sources are the submission's snapshot, as grade-many writes them beside each grade."""
    past = tmp_path / "past"
    (past / "erin").mkdir(parents=True)
    write_sources(snapshot(REFERENCE), past / "erin")
    found = past_round(past)
    assert set(found) == {"past/past/erin"}
    assert set(found["past/past/erin"].deliverables) >= {"loadgen", "gateway", "sizing"}


def test_against_with_no_similarity_is_a_usage_error(tmp_path: Path) -> None:
    done = run_grader("grade-many", tmp_path, "--out", tmp_path / "out", "--no-similarity", "--against", tmp_path)
    assert done.returncode == 2 and "--no-similarity cannot be used with" in done.stderr
    assert "Traceback" not in done.stderr


def _reported(out: Path, name: str, memo: str) -> None:
    """A report folder as grade-many leaves it: a report and the submission's kept sources (a memo)."""
    from round_builder import write_report

    report = write_report(out / name, name.title(), [("loadgen.runs", "loadgen", 1, 1, "passed")])
    write_sources(Sources(name.title(), {"memo": Deliverable("memo/MEMO.md", {"memo/MEMO.md": memo})}), report)


@pytest.mark.parametrize("blind", [False, True])
def test_a_rounds_summary_against_an_earlier_round_names_the_copy_in_grades_csv(tmp_path: Path, blind: bool) -> None:
    """The whole path: an earlier round's --out folder, this round's summary with --against, grades.csv's
    `similar_to` naming the past candidate (by code when that round was blind), and no one else flagged."""
    import csv

    from grader.round.rebuild import SummaryOptions, summarise

    memo = (REFERENCE / "memo" / "MEMO.md").read_text().split("\n---", 2)[-1]
    other = (ROOT / "docs" / "timing.md").read_text()  # prose of its own: copies nobody
    past, now = tmp_path / "grades-2026-q3", tmp_path / "grades-2027-q1"
    _reported(past, "alice", memo)
    if blind:
        (past / CODES).write_text(json.dumps({"alice": "C-7QK2"}))
    _reported(now, "carol", memo)
    _reported(now, "dave", other)
    summarise(now, SummaryOptions(kit_leaks=False, against=(past,)))
    rows = {r["name"]: r for r in csv.DictReader((now / "grades.csv").open())}
    alice = "past/grades-2026-q3/" + ("C-7QK2" if blind else "alice")
    assert rows["carol"]["similar_to"].startswith(alice), rows["carol"]
    assert float(rows["carol"]["similarity"]) >= 0.9
    assert not rows["dave"]["similar_to"].startswith("past/"), rows["dave"]
    if blind:
        assert "alice" not in (now / "grades.csv").read_text()
