"""Memo criteria: findings quote their line, text figures must be front-matter figures, and figures
citing sizing:/loadgen: fields are checked against the sizing command's output and the results file
(judged from the reference's and a chaff's recorded runs)."""

from __future__ import annotations

from pathlib import Path

from recorded import FIXTURES

from grader.criteria.memo_rules import check_memo
from grader.records.book import RecordBook
from grader.grading.rejudge import grade_of
from grader.rubric import load_rubric

ROOT = Path(__file__).resolve().parents[1]
MEMO = (ROOT / "submissions" / "reference" / "memo" / "MEMO.md").read_text()


def rules(text: str) -> dict[str, list[object]]:
    out: dict[str, list[object]] = {}
    for f in check_memo(text):
        out.setdefault(f.rule, []).append(f)
    return out


def test_the_reference_memo_has_no_finding() -> None:
    assert rules(MEMO) == {}


def test_aggregate_throughput_as_a_users_speed_is_caught_by_meaning_and_quoted() -> None:
    text = MEMO.replace("One replica's 595 tokens/s covers it", "Each user sees 595 tokens/s; one replica covers it")
    [finding] = rules(text)["per-user-not-aggregate"]
    assert finding.line is not None and "Each user sees 595 tokens/s" in finding.quote  # type: ignore[attr-defined]
    assert text.splitlines()[finding.line - 1].startswith("3x the average") is False  # type: ignore[attr-defined]


def test_a_speed_in_the_text_that_is_no_figure_contradicts_the_front_matter() -> None:
    text = MEMO.replace("One replica's 595 tokens/s covers it", "One replica's 700 tokens/s covers it")
    [finding] = rules(text)["text-matches-front-matter"]
    assert "700 tokens/s" in finding.message  # type: ignore[attr-defined]


def test_a_placeholder_label_lets_a_laptop_figure_stand_in() -> None:
    laptop = MEMO.replace("provenance: invented sample, scope: aggregate, status: placeholder}",
                          "provenance: laptop, scope: aggregate, status: measured}", 1)
    assert "production-provenance" in rules(laptop)
    labelled = laptop.replace("provenance: laptop, scope: aggregate, status: measured}",
                              "provenance: laptop, scope: aggregate, status: placeholder}", 1)
    assert "production-provenance" not in rules(labelled)


def _judged(name: str) -> dict[str, object]:
    grade = grade_of(RecordBook.read(FIXTURES / name), load_rubric())
    assert len(grade.human_checklist) >= 3  # what a person still judges
    return {c.id: c for c in grade.criteria if c.deliverable == "memo"}


def test_reference_full_marks_and_a_figure_against_its_results_file() -> None:
    reference = _judged("reference")
    assert all(c.status == "passed" for c in reference.values())  # type: ignore[attr-defined]
    assert "19 figures match" in reference["memo.matches-sources"].output  # type: ignore[attr-defined]
    sources = _judged("memo-contradicts-results")["memo.matches-sources"]
    assert sources.score == 0 and "loadgen:summary.ttft_s.max" in sources.output  # type: ignore[attr-defined]
