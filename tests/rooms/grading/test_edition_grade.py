"""A grade against an edition: the runs use the edition's numbers, the reference passes, and a solution sized for
another edition's scenario is flagged in every report."""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path

import pytest
from grader_cli import run_grader
from kit_paths import ROOT

from grader.records.book import RecordBook
from grader.round.summary import read_row, to_csv
from grader.rubric import load_rubric
from grader.rubric.editions import memo_scenario

EDITION = "autumn-2027"


def timeout_of(edition: str) -> float:
    timeout_s: float = load_rubric(edition=edition).scenarios["timeout"].loadgen["timeout_s"]
    return timeout_s


@pytest.mark.slow
def test_the_reference_passes_another_edition_and_is_flagged_as_fitting_the_default(tmp_path: Path) -> None:
    """The reference's code reads every number from its inputs, so it passes an edition's runs; its memo sized the
    default scenario, which the report says. The sizing section ran the edition's memo scenario."""
    out = tmp_path / "report"
    done = run_grader(
        "grade",
        ROOT / "submissions/reference",
        "--edition",
        EDITION,
        "--only",
        "sizing",
        "--only",
        "memo",
        "--only",
        "loadgen.timeout",
        "--seed",
        "3",
        "--out",
        out,
        timeout=300,
    )
    assert done.returncode == 0, (done.stdout + done.stderr)[-3000:]
    report = json.loads((out / "report.json").read_text())
    kit = report["extra_data"]["kit"]
    failed = [c["id"] for c in kit["criteria"] if c["status"] != "passed"]
    assert failed == [], done.stdout[-3000:]
    assert kit["edition"]["name"] == EDITION
    assert kit["edition"]["fits"]["edition"] == "default" and kit["edition"]["fits"]["issued"] == EDITION
    assert f"fits edition default; was issued {EDITION}" in (out / "report.html").read_text()
    assert f"Edition: fits edition default; was issued {EDITION}" in report["output"]
    assert f"fits edition default; was issued {EDITION}" in (out / "junit.xml").read_text()
    # the runs were the edition's: the sizing check ran its memo scenario, the timeout scenario its timeout
    book = RecordBook.read(out / "runs")
    assert book.index["edition"]["name"] == EDITION
    runs = json.dumps(list(book.records.values()))
    scenario = memo_scenario(EDITION)
    assert f'"chats-per-day": {scenario.chats_per_day},' in runs
    assert f'"gpu-hour-usd": [{scenario.gpu_hour_usd[0]}, {scenario.gpu_hour_usd[1]}]' in runs
    assert f'"timeout_s": {timeout_of(EDITION)}' in runs
    # a round's grades.csv says so too
    rows = list(csv.DictReader(io.StringIO(to_csv([read_row(out)]))))
    assert rows[0]["edition"] == EDITION and rows[0]["fits"].startswith("fits edition default;")
