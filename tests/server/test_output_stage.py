"""The output stage alone: tokens in, the writer's events out; no server, no engine."""

from __future__ import annotations

from fake_server.engine.ledger import LedgerRecord
from fake_server.engine.output import generate
from fake_server.engine.sequence import Event, Sequence
from fake_server.engine.textgen import TextStream


class Words(TextStream):
    """Generated text from a fixed list, so the test can see where a stop string falls."""

    def __init__(self, *words: str) -> None:
        super().__init__(0, None, 0)
        self._words = iter(words)

    def content(self) -> str:
        return next(self._words)

    def reasoning(self) -> str:
        return " think"


def seq(
    text: TextStream,
    *,
    max_tokens: int = 100,
    natural: int | None = None,
    reasoning: int = 0,
    stop: tuple[str, ...] = (),
) -> Sequence:
    record = LedgerRecord(id="r", number=1, model="m", endpoint="chat", stream=True, arrival=0.0)
    return Sequence(
        record,
        [1, 2, 3],
        text,
        max_tokens=max_tokens,
        natural_len=natural,
        reasoning_len=reasoning,
        stop=stop,
        eligible_at=0.0,
        role_on_schedule=False,
    )


def test_tokens_of_one_kind_are_merged_into_one_event() -> None:
    s = seq(Words(" a", " b", " c"))
    assert generate(s, 3) == ([Event("content", " a b c", 3)], 3, None)
    assert s.output == 3 and s.content_tokens == 3


def test_reasoning_comes_first_then_content() -> None:
    s = seq(Words(" a", " b"), reasoning=2)
    events, count, finish = generate(s, 3)
    assert events == [Event("reasoning", " think think", 2), Event("content", " a", 1)]
    assert (count, finish) == (3, None)
    assert s.reasoning_out == 2 and s.content_tokens == 1


def test_the_natural_end_is_an_empty_end_of_sequence_token_that_counts() -> None:
    s = seq(Words(" a", " b"), natural=2)
    assert generate(s, 2) == ([Event("content", " a b", 2)], 2, None)
    assert generate(s, 1) == ([Event("content", "", 1, "stop", None)], 1, "stop")
    assert s.output == 3 and s.content_tokens == 3


def test_the_end_of_sequence_token_joins_the_text_of_its_step() -> None:
    s = seq(Words(" a", " b"), natural=2)
    assert generate(s, 5) == ([Event("content", " a b", 3, "stop", None)], 3, "stop")


def test_max_tokens_ends_with_length() -> None:
    s = seq(Words(" a", " b", " c"), max_tokens=2)
    assert generate(s, 1) == ([Event("content", " a", 1)], 1, None)
    assert generate(s, 1) == ([Event("content", " b", 1, "length", None)], 1, "length")


def test_a_stop_string_ends_the_text_just_before_it_and_is_named() -> None:
    s = seq(Words(" a", " b", " c", " d"), stop=("b c",))
    events, count, finish = generate(s, 4)
    assert events == [Event("content", " a ", 3, "stop", "b c")]
    assert (count, finish) == (3, "stop")


def test_text_that_may_begin_a_stop_string_is_held_back_until_it_cannot() -> None:
    s = seq(Words(" ab", " c", "d", " e"), stop=("cd",))
    assert generate(s, 1) == ([Event("content", " a", 1)], 1, None)  # the last character waits
    assert s.held == "b"
    assert generate(s, 1) == ([Event("content", "b ", 1)], 1, None)
    assert s.held == "c"
    assert generate(s, 1) == ([Event("content", "", 1, "stop", "cd")], 1, "stop")


def test_a_token_whose_text_is_all_held_back_is_carried_to_the_next_event() -> None:
    s = seq(Words(" ab", " cd"), stop=("xyz!",))
    assert generate(s, 1) == ([], 1, None)
    assert s.carried == 1 and s.held == " ab"


def test_length_releases_the_held_back_text() -> None:
    s = seq(Words(" a", " b"), max_tokens=2, stop=("zzzz",))
    events, _, finish = generate(s, 2)
    assert finish == "length"
    assert events == [Event("content", " a b", 2, "length", None)]


def test_an_interruption_hands_over_everything_generated_so_far() -> None:
    s = seq(Words(" ab", " c"), stop=("xyz!",))
    generate(s, 1)  # all held back, carried
    assert generate(s, 0, interrupted=True) == ([Event("content", "", 1)], 0, None)
    assert s.carried == 0


def test_tokens_held_back_whole_go_out_with_the_next_content_in_one_content_event() -> None:
    # The longest stop string has 6 characters, so the last 5 wait: " x" alone is all held back.
    s = seq(Words(" x", " y", " q"), stop=(" x y z",))
    assert generate(s, 1) == ([], 1, None)
    assert s.carried == 1
    # " x y": all but its last character can no longer begin the stop string; both tokens go out
    # as one content event (never an event of no kind before it).
    assert generate(s, 1) == ([Event("content", " x ", 2)], 1, None)
    assert s.held == "y"
