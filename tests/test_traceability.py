"""Every graded statement of the brief has a criterion, every criterion a chaff that loses it, and
docs/grading.md shows the table as it is."""

from __future__ import annotations

from pathlib import Path

from grader.rubric import load_rubric
from grader.kit.chaff import list_chaff
from grader.kit.traceability import ROOT, docs_table, problems, render, rows, statements
from grader.rubric.questions import load_questions

RUBRIC = load_rubric()
CHAFF = list_chaff(ROOT / "submissions" / "chaff")
BANK = load_questions(RUBRIC)


def test_every_statement_has_a_criterion_and_every_criterion_a_chaff() -> None:
    assert problems(RUBRIC, CHAFF, bank=BANK) == []
    assert len(statements()) >= 30  # definitions, each deliverable's rules, the files the contract asks for


def test_docs_show_the_table_as_it_is() -> None:
    assert docs_table() == render(rows(RUBRIC, CHAFF, bank=BANK)), "run: python -m grader.kit.traceability --write"


def test_a_broken_chain_is_named(tmp_path: Path) -> None:
    task = tmp_path / "TASK.md"
    task.write_text((ROOT / "starter" / "TASK.md").read_text() + '\n- <a id="new-rule"></a>A rule nobody grades.\n')
    found = problems(RUBRIC, [c for c in CHAFF if c.name != "gateway-health-204"], task, BANK)
    assert any("new-rule: no criterion checks this statement" in p for p in found)
    assert any("new-rule: 0 interview question(s) probe this statement; 2 at least (questions.yaml)" in p for p in found)
    assert "gateway.starts: no chaff loses this criterion (submissions/chaff/*/chaff.yaml targets)" in found
