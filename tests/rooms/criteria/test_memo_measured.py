"""The memo rests on its own measurements, and no memo rule passes on nothing.

Each memo here is the reference's with one change, read as a grade reads it: read_memo on a copy of the reference
submission (its results file, and its sizing command run for real on the memo's sizing_inputs), then judged by the
registered checks with the kit's rubric. `memo.measured` holds the TTFT p50 and p90 (each with the results file's
n) and the throughput to that file; a rule given nothing to judge fails, saying "nothing to judge", and the
percentile rules read from the rubric how many percentiles they need (0: a memo quoting none passes).
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from kit_paths import ROOT

from grader.contract import load_submission
from grader.criteria.catalog import registered
from grader.criteria.memo import facts_of
from grader.criteria.verdict import Verdict
from grader.rubric import load_rubric
from grader.rubric.sizing_plan import argv
from grader.running.memo import read_memo, with_sizing

REFERENCE = ROOT / "submissions" / "reference"
MEMO = (REFERENCE / "memo" / "MEMO.md").read_text(encoding="utf-8")
RESULTS = json.loads((REFERENCE / "memo" / "demo-results.json").read_text(encoding="utf-8"))
RUBRIC = load_rubric()
P50 = '{name: ttft_p50_fake_server, value: 0.152, unit: "s (client TTFT)", provenance: measured on fake server'
P90_FIGURE = "percentile: 90, sample_size: 6, status: measured, derived_from: loadgen:summary.ttft_s.p90}"
THROUGHPUT = "{name: throughput_fake_server, value: 358.3, unit: output tokens/s, provenance: measured on fake server, scope: aggregate"
MEASURED_TEXT = (
    "The client TTFT, to the first content delta, was 0.152 s at p50 and 0.329 s at p90 over n = 6;\n"
    "with 6 requests, p90 and p99 are both the **maximum**, 0.329 s. Per-request TPS was 192.2 tokens/s\n"
    "at p50 (n = 6), against 358.3 output tokens/s aggregate. "
)


def _sizing(folder: Path, flags: dict[str, Any]) -> tuple[dict[str, Any] | None, str, float]:
    """The sizing command on the memo's inputs, run as the grade's one sizing run would be (here, no sandbox)."""
    done = subprocess.run(
        [sys.executable, "sizing/sizing.py", *argv(flags)],
        cwd=folder,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    return (json.loads(done.stdout), "", 0.1) if done.returncode == 0 else (None, done.stderr, 0.1)


@pytest.fixture(scope="module")
def submission(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("memo") / "submission"
    shutil.copytree(REFERENCE, folder, ignore=shutil.ignore_patterns("__pycache__", "*.pyc", ".pytest_cache"))
    return folder


def judged(folder: Path, memo: str, *, results: Any = RESULTS, rubric: Any = RUBRIC) -> dict[str, Verdict]:
    """Every memo criterion's verdict on the reference with `memo` for its MEMO.md (and `results` for its file)."""
    (folder / "memo" / "MEMO.md").write_text(memo, encoding="utf-8")
    (folder / "memo" / "demo-results.json").write_text(json.dumps(results), encoding="utf-8")
    run = read_memo(load_submission(folder))
    if run.sizing_flags is not None:
        run = with_sizing(run, *_sizing(folder, run.sizing_flags))
    facts = facts_of(run)
    checks = registered()
    return {c.id: checks[c.id].judge(facts, c) for c in rubric.criteria if c.deliverable == "memo"}


def edited(*pairs: tuple[str, str], memo: str = MEMO) -> str:
    for old, new in pairs:
        assert memo.count(old) == 1, old
        memo = memo.replace(old, new)
    return memo


def failed(verdicts: dict[str, Verdict]) -> dict[str, str]:
    return {cid: v.output for cid, v in verdicts.items() if not v.passed}


def test_the_reference_quotes_its_own_measurements_and_keeps_every_memo_criterion(submission: Path) -> None:
    verdicts = judged(submission, MEMO)
    assert failed(verdicts) == {}
    assert "its own 3 measurements" in verdicts["memo.measured"].output


def test_a_memo_that_measures_nothing_has_nothing_to_judge_there_and_under_the_percentile_rules(
    submission: Path,
) -> None:
    figures = [line for line in MEMO.splitlines(keepends=True) if "fake_server," in line]
    assert len(figures) == 5
    bare = edited(*((line, "") for line in figures), (MEASURED_TEXT, ""))
    lost = failed(judged(submission, bare))
    assert set(lost) == {"memo.measured", "memo.percentile-n", "memo.p99-max"}
    assert all(output.startswith("nothing to judge: ") for output in lost.values())
    assert "TTFT p50" in lost["memo.measured"] and "throughput" in lost["memo.measured"]


def test_no_results_file_is_nothing_to_judge_naming_it(submission: Path) -> None:
    memo = edited(("loadgen_results: memo/demo-results.json", "loadgen_results: memo/nowhere.json"))
    lost = failed(judged(submission, memo))
    assert lost["memo.measured"].startswith("nothing to judge: ") and "memo/nowhere.json" in lost["memo.measured"]


@pytest.mark.parametrize(
    ("change", "why"),
    [
        (
            (
                "percentile: 90, sample_size: 6, status: measured, derived_from: loadgen:summary.ttft_s.p90}",
                "percentile: 90, sample_size: 60, status: measured, derived_from: loadgen:summary.ttft_s.p90}",
            ),
            "its sample_size is 60, but the results file's n is 6",
        ),
        ((P50, P50.replace("measured on fake server", "target GPU")), "its provenance is 'target GPU'"),
        ((THROUGHPUT, THROUGHPUT.replace("scope: aggregate", "scope: per_user")), "scope: aggregate"),
        (("0.152 s at p50 and ", ""), "the text never quotes its value"),
    ],
)
def test_a_measurement_quoted_wrong_fails_naming_the_figures_line(
    submission: Path, change: tuple[str, str], why: str
) -> None:
    lost = failed(judged(submission, edited(change)))
    assert "memo.measured" in lost and why in lost["memo.measured"], lost
    assert lost["memo.measured"].startswith("line ") and "    > - {name:" in lost["memo.measured"]


def test_a_measurement_is_held_to_the_results_file_not_only_to_its_citation(submission: Path) -> None:
    """The file's p90 moves: the memo's 0.329 is now another run's, whatever it cites."""
    results = json.loads(json.dumps(RESULTS))
    results["summary"]["ttft_s"]["p90"] = 0.25
    lost = failed(judged(submission, MEMO, results=results))
    assert "not the results file's 0.25" in lost["memo.measured"]


def test_a_measurement_in_milliseconds_is_the_same_measurement(submission: Path) -> None:
    memo = edited(
        (P50, P50.replace('value: 0.152, unit: "s (client TTFT)"', 'value: 152.4, unit: "ms (client TTFT)"')),
        ("0.152 s at p50", "152.4 ms at p50"),
    )
    assert "memo.measured" not in failed(judged(submission, memo))


def test_the_percentile_rules_need_as_many_percentiles_as_the_rubric_says(submission: Path, tmp_path: Path) -> None:
    """An earlier brief asked for no percentile: graded with percentiles_needed_count 0, a memo quoting none
    passes both rules; with the kit's rubric (1) it has nothing to judge."""
    percentiles = [line for line in MEMO.splitlines(keepends=True) if "percentile:" in line]
    bare = edited(*((line, "") for line in percentiles), (MEASURED_TEXT, ""))
    assert not failed(judged(submission, bare)).keys() - {"memo.measured", "memo.percentile-n", "memo.p99-max"}
    override = tmp_path / "earlier-brief.yaml"
    override.write_text(
        "rubric: 1\ncriteria:\n  memo.percentile-n: {tolerance: {percentiles_needed_count: 0}}\n"
        "  memo.p99-max: {tolerance: {percentiles_needed_count: 0}}\n",
        encoding="utf-8",
    )
    earlier = load_rubric(override=override, checks=registered())
    lost = failed(judged(submission, bare, rubric=earlier))
    assert "memo.percentile-n" not in lost and "memo.p99-max" not in lost


def test_the_provenance_rule_has_nothing_to_judge_without_the_throughput_the_sizing_ran_with(
    submission: Path,
) -> None:
    replica = (
        "  - {name: replica_throughput, value: 595, unit: output tokens/s, provenance: invented sample, "
        "scope: aggregate, status: placeholder}\n"
    )
    lost = failed(judged(submission, edited((replica, ""))))
    assert set(lost) == {"memo.production-provenance"}
    assert (
        lost["memo.production-provenance"].startswith("nothing to judge: ")
        and "595" in lost["memo.production-provenance"]
    )


def test_the_text_rule_has_nothing_to_judge_in_a_text_that_quotes_no_number(submission: Path) -> None:
    body = MEMO[MEMO.index("# Sizing: Qwen3.5-27B") :]
    memo = edited((body, "# Sizing\n\nEvery figure is in the front matter above. This is a placeholder.\n"))
    lost = failed(judged(submission, memo))
    assert set(lost) == {"memo.text-matches", "memo.measured"}
    assert lost["memo.text-matches"].startswith("nothing to judge: the text quotes no speed")


def test_the_per_user_rule_has_nothing_to_judge_without_a_speed(submission: Path) -> None:
    speeds = [line for line in MEMO.splitlines(keepends=True) if "unit: output tokens/s" in line]
    memo = edited(*((line, line.replace("unit: output tokens/s", "unit: output tokens")) for line in speeds))
    lost = failed(judged(submission, memo))
    assert lost["memo.per-user-speed"] == "nothing to judge: the front matter states no speed (a figure in tokens/s)"
