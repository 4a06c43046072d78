"""The memo's prose rules read what a sentence says, not its shape: honest sentences of many wordings pass, and the
dishonest kinds still fail, each finding quoting the sentence it faults.

Each sentence is added to the reference memo (whose figures and sizing_inputs it quotes) as a paragraph of its
own and read by the same rules the grade scores (check_memo). The honest side is what honest memos wrote and had
flagged: a per-request speed beside the aggregate called the aggregate, a ratio of tokens to tokens, arithmetic
that chains through a number nobody stated. The dishonest side is what the rules exist for: an aggregate given to
a user, a misquoted cost, a number that is neither a figure, an input nor arithmetic shown on them.
"""

from __future__ import annotations

import pytest
from kit_paths import ROOT

from grader.criteria.memo_arithmetic import Arithmetic, Known
from grader.criteria.memo_rules import check_memo, errors, split_front_matter

MEMO = (ROOT / "submissions" / "reference" / "memo" / "MEMO.md").read_text()
FRONT = split_front_matter(MEMO)[0]
FIGURES = {f["name"]: f["value"] for f in FRONT["figures"]}
#: The reference's own measurements, which the sentences below quote beside its sizing.
TPS_P50, THROUGHPUT = FIGURES["tps_p50_fake_server"], FIGURES["throughput_fake_server"]
REPLICA = FRONT["sizing_inputs"]["throughput"]
ANCHOR = "**Before this becomes a plan.**"


def findings(sentence: str) -> list[tuple[str, str]]:
    """(rule, quoted sentence) of each scored finding on the reference memo with `sentence` as a paragraph."""
    assert ANCHOR in MEMO
    memo = MEMO.replace(ANCHOR, f"{sentence}\n\n{ANCHOR}", 1)
    return [(f.rule, f.quote) for f in errors(check_memo(memo))]


def test_the_reference_itself_sets_a_requests_speed_beside_the_aggregate_and_passes() -> None:
    assert f"Per-request TPS was {TPS_P50} tokens/s" in MEMO and f"{THROUGHPUT} output tokens/s aggregate" in MEMO
    assert errors(check_memo(MEMO)) == []


HONEST = [
    # a per-request speed and, beside it, the aggregate called the aggregate: in one clause or two, any order
    (
        f"Per-request TPS was {TPS_P50} tokens/s at p50 (n = 6), and the run's throughput {THROUGHPUT} output "
        "tokens/s aggregate."
    ),
    f"Per-request TPS (p50 {TPS_P50} tokens/s, n = 6) sits far below the {THROUGHPUT} output tokens/s aggregate.",
    f"One request streamed at {TPS_P50} tok/s at the median of 6 while all six together made {THROUGHPUT} tok/s.",
    (
        f"Across all 6 streams the server produced {THROUGHPUT} tokens per second, far more than the {TPS_P50} "
        "tokens/s a single request saw at its median (n = 6)."
    ),
    f"A user's stream ran at {TPS_P50} tokens/s (p50 of 6 requests); the replica's total was {THROUGHPUT} tokens/s.",
    f"| per-request TPS, p50 of 6 | {TPS_P50} tokens/s | throughput, aggregate | {THROUGHPUT} tokens/s |",
    f"No user sees {REPLICA} tokens/s: that is the replica's aggregate over 16 streams.",
    f"Users share the replica's {REPLICA} tokens/s, so each gets far less.",
    f"Our users see {REPLICA} tokens/s in total.",
    "Users' chats add up to 166.67 output tokens/s at peak.",
    f"The {REPLICA} tokens/s aggregate is shared by 16 users, so each user sees 37.19 tokens/s.",
    f"Each request's own speed (p50 {TPS_P50} tokens/s, n = 6) is not the {THROUGHPUT} tokens/s the server made.",
    f"Each user sees {REPLICA} tokens/s / 16 = 37.19 tokens/s at most.",
    # a ratio of tokens to tokens is no token count
    "Each turn sends 5 input tokens for every output token.",
    "Prompts outweigh answers at 5 input tokens per output token.",
    "That is one output token to every 5 input tokens.",
    # arithmetic shown, chained through results and through an operand that is two inputs combined
    "A 4-turn chat carries at most 4 x 1,800 = 7,200 tokens.",
    "A 4-turn chat carries 4 turns x 1,800 tokens = 7,200 tokens.",
    "A day brings 2,000 x 4 x 300 = 2,400,000 output tokens.",
    "A chat's answers are 4 x 300 = 1,200 output tokens, and a day's 1,200 x 2,000 = 2,400,000 output tokens.",
    "A turn holds 1,500 + 300 = 1,800 tokens, so a chat holds 7,200 tokens (4 x 1,800).",
    "Two replicas cost 2 x $2.99 = $5.98 an hour, and a 12-hour day $5.98 x 12 = $71.76.",
    "At 16 streams each gets 595 / 16 = 37.19 tokens/s, or 37.19 x 3,600 = 133,884 tokens an hour.",
    "Busy a quarter of the time, a million tokens cost $1.40 / 25% = $5.60.",
    "The peak, 2,000 x 4 x 300 / (12 x 3,600) x 3 = 166.67 output tokens/s, needs 1 replica.",
]


@pytest.mark.parametrize("sentence", HONEST)
def test_an_honest_sentence_has_no_finding(sentence: str) -> None:
    assert findings(sentence) == []


DISHONEST = [
    # an aggregate given to a user, whatever else the sentence says
    (f"Each user gets {REPLICA} tokens/s, so one replica covers the load.", "per-user-not-aggregate"),
    (f"Each user gets the full {REPLICA} tokens/s aggregate throughput.", "per-user-not-aggregate"),
    (f"Users see {REPLICA} tokens/s.", "per-user-not-aggregate"),
    (f"Users each get the full {REPLICA} tokens/s aggregate.", "per-user-not-aggregate"),
    (f"Users get {REPLICA} tokens/s each with no wait, so the load needs 1 replica.", "per-user-not-aggregate"),
    (f"Per-user throughput: {REPLICA} tokens/s.", "per-user-not-aggregate"),
    (f"At {REPLICA} tokens/s, every user gets an answer of 300 tokens in half a second.", "per-user-not-aggregate"),
    (f"Each chat streams at {THROUGHPUT} tokens/s.", "per-user-not-aggregate"),
    (f"Each of the 16 streams gets {REPLICA} tokens/s.", "per-user-not-aggregate"),
    (f"Each user gets {REPLICA} tokens/s, with no wait for a slot.", "per-user-not-aggregate"),
    (f"Per-request TPS is {THROUGHPUT} tokens/s.", "per-user-not-aggregate"),
    (f"A user (one of 16 streams) sees {REPLICA} tok/s.", "per-user-not-aggregate"),
    # a misquoted cost, a number that is no figure, no input and no arithmetic on them
    ("Fully busy, the low price costs $1.04 per million output tokens.", "text-matches-front-matter"),
    ("A 4-turn chat carries at most 4 x 1,800 = 7,400 tokens.", "text-matches-front-matter"),
    ("A 4-turn chat carries at most 4 x 1,900 = 7,600 tokens.", "text-matches-front-matter"),
    ("A turn holds 1,500 + 300 = 1,900 tokens.", "text-matches-front-matter"),
    ("Each chat carries 9,000 tokens.", "text-matches-front-matter"),
    ("Each turn sends 5 input tokens.", "text-matches-front-matter"),
    ("The batch needs 3 replicas.", "text-matches-front-matter"),
    ("The client TTFT was 0.25 s at p50 (n = 6).", "text-matches-front-matter"),
    ("At 16 streams each gets 595 / 16 = 39.5 tokens/s.", "text-matches-front-matter"),
]


@pytest.mark.parametrize(("sentence", "rule"), DISHONEST)
def test_a_dishonest_sentence_is_found_and_quoted(sentence: str, rule: str) -> None:
    found = findings(sentence)
    assert found and {r for r, _ in found} == {rule}, found
    assert all(quote == sentence for _, quote in found)


# --- how far shown arithmetic reaches ----------------------------------------------------------------------------

TURNS = Known(4, "flag:turns-per-chat")
TOKENS = [Known(1500, "tokens"), Known(300, "tokens")]


def shows(known: list[Known], sentence: str, number: str) -> bool:
    at = sentence.index(number)
    return Arithmetic(known).shows(sentence, (at, at + len(number)))


def test_an_operand_nobody_stated_is_two_figures_or_inputs_combined_a_sum_of_one_kind() -> None:
    assert shows([TURNS, *TOKENS], "A chat carries 4 x 1,800 = 7,200 tokens.", "7,200")  # 1,500 + 300 tokens
    assert shows([TURNS, *TOKENS], "A chat carries 4 x 1,200 = 4,800 tokens.", "4,800")  # 1,500 - 300 tokens
    price = Known(4, "cost")
    # 304 is 300 tokens + $4: no sum of two kinds is an operand, so 4 x 304 shows nothing
    assert not shows([TURNS, TOKENS[1], price], "A chat costs 4 x 304 = 1,216 tokens.", "1,216")
    # written beside no operator, a number nobody stated is no operand
    assert not shows([TURNS, *TOKENS], "A turn carries 1,800 tokens.", "1,800")


def test_an_operand_nobody_stated_is_exact_or_rounded_to_four_digits() -> None:
    known = [Known(595, "speed"), Known(16, "flag:concurrency")]
    assert shows(known, "Each stream's 37.19 x 3,600 = 133,884 tokens an hour.", "133,884")  # 595 / 16 = 37.1875
    assert not shows(known, "Each stream's 37.2 x 3,600 = 133,920 tokens an hour.", "133,920")  # three digits


def test_multiplying_by_one_shows_nothing() -> None:
    """12 is an hour count; "x 1" cannot make it a token count."""
    known = [Known(1, "replicas"), Known(12, "hours")]
    assert not shows(known, "One replica over 12 x 1 = 12 tokens.", "12 tokens")
    assert shows(known + [Known(300, "tokens")], "One replica over 12 x 300 = 3,600 tokens.", "3,600")


def test_a_chain_goes_on_only_through_numbers_already_accepted() -> None:
    known = [TURNS, *TOKENS, Known(2000, "flag:chats-per-day")]
    chained = "A chat is 4 x 1,800 = 7,200 tokens; a day is 7,200 x 2,000 = 14,400,000 tokens."
    assert shows(known, chained, "14,400,000")
    broken = "A chat is 4 x 1,850 = 7,400 tokens; a day is 7,400 x 2,000 = 14,800,000 tokens."
    assert not shows(known, broken, "7,400 tokens") and not shows(known, broken, "14,800,000")
