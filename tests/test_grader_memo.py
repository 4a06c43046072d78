"""Memo criteria: findings quote their line, text figures must be front-matter figures, and figures
citing sizing:/loadgen: fields are checked against the real sizing command and the results file."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from grader.kit.chaff import materialize
from grader.criteria.memo_rules import check_memo

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


def _grade(folder: Path, out: Path) -> dict[str, dict[str, object]]:
    done = subprocess.run([sys.executable, "-m", "grader.cli", "grade", str(folder), "--out", str(out),
                           "--only", "memo"], cwd=ROOT, capture_output=True, text=True, timeout=300, check=False)
    assert done.returncode == 0, done.stderr
    report = json.loads((out / "report.json").read_text())
    assert len(report["extra_data"]["human"]["checklist"]) >= 3  # what a person still judges
    return {t["name"].split(":")[0]: t for t in report["tests"]}


def test_reference_full_marks_and_a_figure_against_its_results_file(tmp_path: Path) -> None:
    tests = _grade(ROOT / "submissions" / "reference", tmp_path / "ref")
    assert all(t["score"] == t["max_score"] for t in tests.values())
    assert "19 figures match" in str(tests["memo.matches-sources"]["output"])
    chaff = materialize(ROOT / "submissions" / "chaff" / "memo-contradicts-results", tmp_path / "chaff")
    tests = _grade(chaff, tmp_path / "out")
    assert tests["memo.matches-sources"]["score"] == 0
    assert "loadgen:summary.ttft_s.max" in str(tests["memo.matches-sources"]["output"])
