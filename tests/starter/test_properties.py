"""Property tests (hypothesis): the two SSE decoders and nearest rank, against their definitions.

- SSE (the WHATWG HTML standard, section 9.2.6): whatever the line endings (LF, CRLF, lone CR),
  with or without the space after `data:`, with comments between fields, and however the bytes are
  cut into reads (a CR and its LF in two reads, a UTF-8 character split in two), a decoder yields
  exactly the events that were written, in order; an event whose blank line never arrived is
  dropped. Checked for the starter's stub client (text in) and the reference load generator (bytes in).
- Nearest rank: the result is the smallest recorded value with at least p% of the values at or
  below it, computed here with exact fractions rather than the code's own rank formula.

Examples are derandomized so a CI run repeats exactly; the example counts keep this under seconds.
"""

from __future__ import annotations

import importlib.util
import itertools
import random
import sys
from dataclasses import dataclass
from fractions import Fraction
from types import ModuleType

from api_client import SSEDecoder as StubDecoder  # the starter's stub client (on pytest's pythonpath)
from hypothesis import given, settings
from hypothesis import strategies as st
from kit_paths import ROOT

from grader.criteria.truth import nearest_rank

PROFILE = settings(max_examples=300, deadline=None, derandomize=True, database=None)


def _reference_sse() -> ModuleType:
    """The reference load generator's decoder module, loaded by path (it is not a package of the kit)."""
    path = ROOT / "submissions" / "reference" / "loadgen" / "sse.py"
    spec = importlib.util.spec_from_file_location("reference_loadgen_sse", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up by name
    spec.loader.exec_module(module)
    return module


ReferenceDecoder = _reference_sse().SSEDecoder

# A field value: any text without line ends (the format cannot carry them inside a line).
_VALUE = st.text(st.characters(blacklist_characters="\r\n", blacklist_categories=["Cs"]), max_size=12)


@dataclass(frozen=True)
class Written:
    """An event as a server writes it, and what a reader must get back."""

    lines: tuple[str, ...]  # field and comment lines, without their line ends
    data: str | None  # None: no data line, so no event is dispatched


@st.composite
def events(draw: st.DrawFn) -> Written:
    values = draw(st.lists(_VALUE, min_size=0, max_size=3))
    lines: list[str] = []
    expected: list[str] = []
    for value in values:
        if draw(st.booleans()):
            lines.append(f": {draw(_VALUE)}")  # a comment, e.g. ": keep-alive"
        if draw(st.booleans()):
            lines.append(f"data: {value}")  # one space after the colon is dropped
            expected.append(value)
        else:
            lines.append(f"data:{value}")
            expected.append(value.removeprefix(" "))
    if draw(st.booleans()):
        lines.append(f": {draw(_VALUE)}")
    return Written(tuple(lines), "\n".join(expected) if values else None)


@st.composite
def streams(draw: st.DrawFn) -> tuple[str, list[str], str]:
    """(the stream's text, the data of every complete event, an unfinished tail)."""
    ending = draw(st.sampled_from(["\n", "\r\n", "\r"]))
    written = draw(st.lists(events(), max_size=6))
    text = "".join(ending.join(w.lines) + (ending if w.lines else "") + ending for w in written)
    expected = [w.data for w in written if w.data is not None]
    tail = ""
    if draw(st.booleans()):  # an event cut before its blank line: never dispatched
        tail = f"data: {draw(_VALUE)}" + draw(st.sampled_from(["", ending]))
    return text, expected, tail


def _cuts(size: int) -> st.SearchStrategy[list[int]]:
    """Where the reads end: up to 8 places anywhere in the stream."""
    return st.lists(st.integers(0, size), max_size=8).map(lambda cuts: sorted(set(cuts)))


def _pieces(blob: str | bytes, cuts: list[int]) -> list[str | bytes]:
    bounds = [0, *cuts, len(blob)]
    return [blob[a:b] for a, b in itertools.pairwise(bounds)]


@PROFILE
@given(data=st.data(), stream=streams())
def test_the_stub_clients_decoder_reads_every_framing_in_any_reads(
    data: st.DataObject, stream: tuple[str, list[str], str]
) -> None:
    text, expected, tail = stream
    whole = text + tail
    decoder = StubDecoder()
    got: list[str] = []
    for piece in _pieces(whole, data.draw(_cuts(len(whole)))):
        assert isinstance(piece, str)
        got += decoder.feed(piece)
    assert got == expected


@PROFILE
@given(data=st.data(), stream=streams())
def test_the_reference_decoder_reads_every_framing_in_any_reads(
    data: st.DataObject, stream: tuple[str, list[str], str]
) -> None:
    text, expected, tail = stream
    blob = (text + tail).encode("utf-8")  # cuts may fall inside a character or between CR and LF
    decoder = ReferenceDecoder()
    got = []
    for piece in _pieces(blob, data.draw(_cuts(len(blob)))):
        assert isinstance(piece, bytes)
        got += [event.data for event in decoder.feed(piece)]
    assert got == expected
    assert all(event.event == "message" for event in ReferenceDecoder().feed(text.encode()))


@PROFILE
@given(stream=streams())
def test_both_decoders_agree_read_whole(stream: tuple[str, list[str], str]) -> None:
    text, _, tail = stream
    assert StubDecoder().feed(text + tail) == [e.data for e in ReferenceDecoder().feed((text + tail).encode())]


_SAMPLES = st.lists(st.floats(min_value=0, max_value=1e4, allow_nan=False), min_size=1, max_size=60)
_PERCENT = st.integers(0, 10_000).map(lambda hundredths: hundredths / 100)  # p to two decimals, as rubrics state it


@PROFILE
@given(values=_SAMPLES, p=_PERCENT)
def test_nearest_rank_is_the_smallest_value_with_p_percent_at_or_below(values: list[float], p: float) -> None:
    result = nearest_rank(values, p)
    assert result in values
    share = Fraction(round(p * 100), 10_000)  # p as an exact fraction of one
    n = len(values)
    at_or_below = sum(v <= result for v in values)
    assert Fraction(at_or_below, n) >= share or result == min(values)
    below = [v for v in values if v < result]
    if below:  # any smaller value would leave less than p% at or below it
        assert Fraction(sum(v <= max(below) for v in values), n) < share


@PROFILE
@given(values=_SAMPLES, p=_PERCENT, q=_PERCENT, seed=st.randoms(use_true_random=False))
def test_nearest_rank_ignores_order_and_grows_with_p(
    values: list[float], p: float, q: float, seed: random.Random
) -> None:
    shuffled = list(values)
    seed.shuffle(shuffled)
    assert nearest_rank(shuffled, p) == nearest_rank(values, p)
    low, high = sorted((p, q))
    at_low, at_high = nearest_rank(values, low), nearest_rank(values, high)
    assert at_low is not None and at_high is not None and at_low <= at_high  # samples are never empty
    assert nearest_rank(values, 100) == max(values)
    assert nearest_rank(values, 0) == min(values)


def test_nearest_rank_of_nothing_is_none() -> None:
    assert nearest_rank([], 50) is None
