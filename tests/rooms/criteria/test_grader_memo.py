"""Memo criteria: findings quote their line, text figures must be front-matter figures, and figures
citing sizing:/loadgen: fields are checked against the sizing command's output and the results file
(judged from the reference's and a chaff's recorded runs)."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

from grader_cli import run_grader
from kit_paths import ROOT
from recorded import FIXTURES

from grader.criteria.memo_rules import BrokenRule, check_memo, split_front_matter
from grader.grading.rejudge import grade_of
from grader.outcome import CriterionResult
from grader.records.book import RecordBook
from grader.rubric import load_rubric

MEMO = (ROOT / "submissions" / "reference" / "memo" / "MEMO.md").read_text()
INPUTS = split_front_matter(MEMO)[0]["sizing_inputs"]


def rules(text: str) -> dict[str, list[BrokenRule]]:
    out: dict[str, list[BrokenRule]] = {}
    for f in check_memo(text):
        out.setdefault(f.rule, []).append(f)
    return out


def test_the_reference_memo_has_no_finding() -> None:
    assert rules(MEMO) == {}


def test_aggregate_throughput_as_a_users_speed_is_caught_by_meaning_and_quoted() -> None:
    text = MEMO.replace("One replica's 595 tokens/s covers it", "Each user sees 595 tokens/s; one replica covers it")
    [finding] = rules(text)["per-user-not-aggregate"]
    assert finding.line is not None and "Each user sees 595 tokens/s" in finding.quote
    assert text.splitlines()[finding.line - 1].startswith("3x the average") is False


def test_a_speed_in_the_text_that_is_no_figure_contradicts_the_front_matter() -> None:
    text = MEMO.replace("One replica's 595 tokens/s covers it", "One replica's 700 tokens/s covers it")
    [finding] = rules(text)["text-matches-front-matter"]
    assert "700 tokens/s" in finding.message


def test_a_placeholder_label_lets_a_laptop_figure_stand_in() -> None:
    laptop = MEMO.replace(
        "provenance: invented sample, scope: aggregate, status: placeholder}",
        "provenance: laptop, scope: aggregate, status: measured}",
        1,
    )
    assert "production-provenance" in rules(laptop)
    labelled = laptop.replace(
        "provenance: laptop, scope: aggregate, status: measured}",
        "provenance: laptop, scope: aggregate, status: placeholder}",
        1,
    )
    assert "production-provenance" not in rules(labelled)


ONE_STREAM = "  - {name: one_stream_throughput, value: 42, unit: output tokens/s, provenance: invented sample, scope: aggregate, status: placeholder}\n"
HONEST_CAVEAT = "The 595 is one replica's aggregate over 16\nstreams; it is not any user's speed, and per-request TPS has to be measured per request."


def restated_per_user(value: object, sentence: str, memo: str = MEMO) -> str:
    """The memo with a per_user figure of `value` (citing nothing) and `sentence` for its honest caveat."""
    figure = f"  - {{name: user_speed, value: {value}, unit: output tokens/s, provenance: invented sample, scope: per_user, status: placeholder}}\n"
    assert ONE_STREAM in memo and HONEST_CAVEAT in memo
    return memo.replace(ONE_STREAM, ONE_STREAM + figure).replace(HONEST_CAVEAT, sentence)


def test_the_throughput_streams_share_sold_as_each_users_speed_is_caught_in_the_figure_and_the_text() -> None:
    """The held-out kind of memo: the sizing's throughput as a per_user figure of its own, and a sentence saying
    each user sees it; the per_user figure of that value must not make the sentence look stated."""
    throughput, streams = INPUTS["throughput"], INPUTS["concurrency"]
    sentence = f"With {streams} concurrent chats each user sees {throughput} tok/s."
    found = rules(restated_per_user(throughput, sentence))
    assert set(found) == {"per-user-not-aggregate"}
    figure, text = found["per-user-not-aggregate"]
    assert figure.figure == "user_speed" and f"{streams} streams" in figure.message
    assert text.quote == sentence


def test_a_users_share_of_the_throughput_and_one_streams_speed_pass() -> None:
    throughput, streams = INPUTS["throughput"], INPUTS["concurrency"]
    share = f"{throughput / streams:.2f}"
    shared = f"With {streams} concurrent chats each user sees {throughput} / {streams} = {share} tokens/s."
    assert rules(restated_per_user(share, shared)) == {}
    alone = MEMO.replace(f"concurrency: {streams},", "concurrency: 1,", 1)
    assert alone != MEMO
    assert (
        rules(restated_per_user(throughput, f"With one chat at a time its user sees {throughput} tok/s.", alone)) == {}
    )


def test_a_sentence_wrapped_onto_the_next_line_is_read_whole() -> None:
    """Markdown wraps a paragraph's lines into one text: a sentence about a user whose speed is on the next line,
    and arithmetic whose result is on the next line, are judged as the reader reads them."""
    throughput, streams = INPUTS["throughput"], INPUTS["concurrency"]
    wrapped = restated_per_user(throughput, f"With {streams} concurrent chats each\nuser sees {throughput} tok/s.")
    found = rules(wrapped)
    assert set(found) == {"per-user-not-aggregate"} and len(found["per-user-not-aggregate"]) == 2
    sentence = found["per-user-not-aggregate"][1]
    assert sentence.quote == f"With {streams} concurrent chats each user sees {throughput} tok/s."
    assert sentence.line is not None  # the finding quotes its line
    assert wrapped.splitlines()[sentence.line - 1].endswith(f"{streams} concurrent chats each")
    arithmetic = shows_its_arithmetic().replace(f"{TURNS} x {PER_TURN:,} = ", f"{TURNS} x {PER_TURN:,}\n= ")
    assert f"x {PER_TURN:,}\n= {TURNS * PER_TURN:,} tokens" in arithmetic and rules(arithmetic) == {}


def _judged(name: str) -> dict[str, CriterionResult]:
    grade = grade_of(RecordBook.read(FIXTURES / name), load_rubric())
    assert len(grade.human_checklist) >= 3  # what a person still judges
    return {c.id: c for c in grade.criteria if c.deliverable == "memo"}


def test_reference_full_marks_and_a_figure_against_its_results_file() -> None:
    reference = _judged("reference")
    assert all(c.status == "passed" for c in reference.values())
    assert "23 figures match" in reference["memo.matches-sources"].output
    sources = _judged("memo-contradicts-results")["memo.matches-sources"]
    assert sources.score == 0 and "loadgen:summary.ttft_s.max" in sources.output


# --- arithmetic shown in the text ----------------------------------------------------------------------------

TURNS, STREAMS, THROUGHPUT = INPUTS["turns-per-chat"], INPUTS["concurrency"], INPUTS["throughput"]
PER_TURN = INPUTS["input-tokens-per-turn"] + INPUTS["output-tokens-per-turn"]  # stated below as a figure of its own
LOW, HIGH = INPUTS["gpu-hour-usd"]
LAST_FIGURE = "  - {name: ttft_max_fake_server,"


def shows_its_arithmetic(memo: str = MEMO, *, tokens: str = "", speed: str = "", cost: str = "") -> str:
    """The memo with a paragraph of arithmetic on its own figures and inputs, each result no figure of its own:
    a chat's tokens from the turns and a turn's tokens, a stream's share of the replica, the prices' gap."""
    figure = (
        f"  - {{name: tokens_per_turn, value: {PER_TURN}, unit: tokens per turn, provenance: assumption, scope: n/a}}\n"
    )
    lines = [
        "**Arithmetic.**",
        f"Each chat is {TURNS} x {PER_TURN:,} = {tokens or f'{TURNS * PER_TURN:,}'} tokens, prompts and answers together.",
        f"Each of the {STREAMS} streams gets {THROUGHPUT} / {STREAMS} = {speed or f'{THROUGHPUT / STREAMS:.2f}'} tokens/s.",
        f"The dearer GPU costs ${HIGH:.2f} - ${LOW:.2f} = ${cost or f'{HIGH - LOW:.2f}'} more an hour.",
    ]
    memo = memo.replace(LAST_FIGURE, figure + LAST_FIGURE, 1)
    return memo.replace("**Before this becomes a plan.**", "\n".join(lines) + "\n\n**Before this becomes a plan.**", 1)


def test_a_number_worked_out_in_its_sentence_from_figures_and_inputs_is_quoted_honestly() -> None:
    memo = shows_its_arithmetic()
    assert f"= {TURNS * PER_TURN:,} tokens" in memo and f"= {THROUGHPUT / STREAMS:.2f} tokens/s" in memo
    assert rules(memo) == {}


def test_arithmetic_shown_counts_at_the_precision_shown_and_no_further() -> None:
    rounded = shows_its_arithmetic(speed=f"{THROUGHPUT / STREAMS:.1f}", cost=f"{HIGH - LOW:.1f}")
    assert rules(rounded) == {}
    # 2% off: beyond the last digit shown and beyond the half percent a rounded figure is allowed
    wrong = {
        "tokens": f"{round(TURNS * PER_TURN * 1.02):,}",
        "speed": f"{THROUGHPUT / STREAMS * 1.02:.2f}",
        "cost": f"{(HIGH - LOW) * 1.02:.2f}",
    }
    for part, written in wrong.items():
        [finding] = rules(shows_its_arithmetic(**{part: written}))["text-matches-front-matter"]
        assert written in finding.message and written in finding.quote


def test_an_operand_that_is_no_figure_or_input_shows_nothing() -> None:
    memo = shows_its_arithmetic().replace(f"{TURNS} x {PER_TURN:,} =", f"{TURNS} x {PER_TURN + 100:,} =")
    [finding] = rules(memo)["text-matches-front-matter"]
    assert f"{TURNS * PER_TURN:,} tokens" in finding.message


def test_the_throughput_restated_per_user_loses_the_per_user_criterion_alone_and_says_where() -> None:
    judged = _judged("memo-aggregate-restated-per-user")
    assert {i for i, c in judged.items() if c.status != "passed"} == {"memo.per-user-speed"}
    output = judged["memo.per-user-speed"].output
    assert "user_speed" in output and f"each user sees {INPUTS['throughput']} tok/s" in output


def test_a_memo_that_shows_its_arithmetic_and_a_users_share_keeps_full_memo_marks(tmp_path: Path) -> None:
    """The must-pass side of the two rules, graded for real: a memo that works its figures out in the text, and
    gives a user's speed as the throughput over the streams (a per_user figure cited from the sizing command)."""
    throughput, streams = INPUTS["throughput"], INPUTS["concurrency"]
    share = f"{throughput / streams:.2f}"
    memo = restated_per_user(
        share,
        f"With {streams} concurrent chats each user sees {throughput} / {streams} =\n{share} tokens/s.",
        shows_its_arithmetic(),
    )
    memo = memo.replace(
        "scope: per_user, status: placeholder}",
        "scope: per_user, status: derived, derived_from: sizing:per_stream_output_tokens_per_s}",
    )
    submission = tmp_path / "submission"
    shutil.copytree(
        ROOT / "submissions" / "reference",
        submission,
        ignore=shutil.ignore_patterns("__pycache__", "*.pyc", ".pytest_cache"),
    )
    (submission / "memo" / "MEMO.md").write_text(memo, encoding="utf-8")
    checked = subprocess.run(
        [sys.executable, "-m", "grader.cli", "memo", str(submission / "memo" / "MEMO.md")],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert checked.returncode == 0, checked.stdout + checked.stderr
    graded = run_grader("grade", "--seed", "0", submission, "--only", "memo", "--out", tmp_path / "report", timeout=120)
    assert graded.returncode == 0, graded.stdout + graded.stderr
    report = json.loads((tmp_path / "report" / "report.json").read_text())
    memo_ids = {c.id for c in load_rubric().criteria if c.deliverable == "memo"}
    scored = {t["name"].split(":")[0]: t for t in report["tests"]}
    assert set(scored) == memo_ids
    assert all(t["status"] == "passed" and t["score"] == t["max_score"] > 0 for t in scored.values()), scored
    assert report["score"] == report["max_score"]
