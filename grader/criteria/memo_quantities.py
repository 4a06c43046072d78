"""The memo's prose against its own figures: every cost, price, replica count, hour count and token count
the text quotes must be a figure of the front matter, or one of the inputs the sizing command was run
with (`sizing_inputs`, and the contract's defaults for flags left out), at the precision shown.

A memo whose text says "$1.04 per million when fully busy" while its front matter says 1.40 has two
answers; a reader acts on the text. Speeds and latencies are checked beside these
(memo_prose.text_rules). Arithmetic written out with bare numbers ("4,305.60 / 30 / 0.048") is left
alone: only a number carrying its unit (`$`, `USD`, `replicas`, `hours`, `tokens`) is a quoted figure.
A ratio of tokens to tokens ("5 input tokens for every output token") is no token count: it is not read.

An honest memo shows its arithmetic: in "4 x 1,800 = 7,200 tokens" the 7,200 is no figure, but the
reader can check it from the numbers beside it (memo_arithmetic.py says how far that reading goes).
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from grader.criteria.memo_arithmetic import Arithmetic, Known
from grader.criteria.memo_figures import is_number, is_token_rate
from grader.criteria.memo_text import agrees, time_scale

__all__ = ["QUANTITIES", "Quantity", "input_values", "known_values", "misquoted", "quoted"]

_NUMBER = r"(\d[\d,]*(?:\.\d+)?)"
#: A token count that is one side of a ratio of tokens to tokens: "5 input tokens for every output token".
_RATIO_AFTER = re.compile(
    r"^\s+(?:for|per|to|in)\s+(?:(?:every|each|a|an|one|1)\s+)?(?:[a-z]+[- ])?tokens?\b", re.IGNORECASE
)
_RATIO_BEFORE = re.compile(r"\btokens?\s+(?:for|per|to|in)\s+(?:every|each)\s+$", re.IGNORECASE)
#: The contract's defaults for the flags a memo's sizing_inputs may leave out (schemas/contract/README.md).
_INPUT_DEFAULTS = {"hours-per-month": 720, "min-replicas": 2, "gpus-per-replica": 1}


@dataclass(frozen=True)
class Quantity:
    """A kind of figure a memo's text quotes: how it is written, which figures and inputs may stand behind it."""

    kind: str  # "cost", "replicas", "hours", "tokens" (for the message)
    pattern: re.Pattern[str]  # group 1 is the number as written
    unit: Callable[[str], bool]  # whether a front-matter figure's unit is of this kind
    flag: Callable[[str], bool]  # whether a sizing input (a flag name) is of this kind


def _unit_words(unit: str) -> list[str]:
    return re.findall(r"[a-z]+", unit.lower())


QUANTITIES = (
    Quantity(
        "cost",
        re.compile(rf"(?:\$\s?{_NUMBER}|{_NUMBER}\s*(?:USD|US\$)\b|\bUSD\s*{_NUMBER})"),
        lambda unit: "usd" in _unit_words(unit) or "$" in unit,
        lambda flag: "usd" in flag.split("-"),
    ),
    Quantity(
        "replicas",
        re.compile(rf"\b{_NUMBER}\s+(?:more\s+)?replicas?\b", re.IGNORECASE),
        lambda unit: bool(_unit_words(unit)) and _unit_words(unit)[0] in ("replica", "replicas"),
        lambda flag: flag == "min-replicas",
    ),
    Quantity(
        "hours",
        re.compile(rf"\b{_NUMBER}\s*(?:hours?|h)\b(?![-/])", re.IGNORECASE),
        lambda unit: bool(_unit_words(unit)) and _unit_words(unit)[0] in ("h", "hour", "hours"),
        lambda flag: flag in ("active-hours", "hours-per-month"),
    ),
    Quantity(
        "tokens",
        re.compile(
            rf"\b{_NUMBER}\s+(?:(?:output|input|prompt|context|kv[- ]cache)\s+)?tokens?\b"
            r"(?!\s*(?:/|per\s+(?:second|s\b)))",
            re.IGNORECASE,
        ),
        lambda unit: "token" in unit.lower() and not re.search(r"/\s*s\b|per\s+second|per\s+million", unit.lower()),
        lambda flag: "tokens" in flag.split("-") and not flag.startswith("kv-"),
    ),
)


def input_values(inputs: Any) -> dict[str, list[float]]:
    """Each sizing input's numbers (a repeated flag gives several), defaults filled in."""
    out: dict[str, list[float]] = {k: [float(v)] for k, v in _INPUT_DEFAULTS.items()}
    if isinstance(inputs, dict):
        for name, value in inputs.items():
            values = value if isinstance(value, list) else [value]
            numbers = [float(v) for v in values if isinstance(v, int | float) and not isinstance(v, bool)]
            if numbers:
                out[str(name)] = numbers
    return out


def _kind(fig: dict[str, Any]) -> str:
    """What a figure counts, by its unit: a quantity's kind, a speed, a time, or its unit's first word."""
    unit: str = fig["unit"] if isinstance(fig.get("unit"), str) else ""
    kind = next((q.kind for q in QUANTITIES if q.unit(unit)), None)
    if kind is None and is_token_rate(fig):
        kind = "speed"
    if kind is None and time_scale(unit) is not None:
        kind = "time"
    return kind or "unit:" + ((_unit_words(unit) or [""])[0])


def _flag_kind(flag: str) -> str:
    kind = next((q.kind for q in QUANTITIES if q.flag(flag)), None)
    return kind or ("speed" if flag == "throughput" else f"flag:{flag}")


def known_values(figures: list[dict[str, Any]], inputs: dict[str, list[float]]) -> list[Known]:
    """Every number the memo states: each figure's value and each sizing input, with what it counts (an operand
    of arithmetic may be a count of turns beside a count of tokens; a sum adds two of one kind)."""
    known = [Known(float(f["value"]), _kind(f)) for f in figures if is_number(f.get("value"))]
    known += [Known(v, _flag_kind(flag)) for flag, numbers in inputs.items() for v in numbers]
    return [k for k in known if math.isfinite(k.value)]


def _ratio(sentence: str, span: tuple[int, int]) -> bool:
    """Whether the token count at `span` is one side of a ratio of tokens to tokens."""
    return bool(_RATIO_AFTER.match(sentence[span[1] :]) or _RATIO_BEFORE.search(sentence[: span[0]]))


def _allowed(quantity: Quantity, figures: list[dict[str, Any]], inputs: dict[str, list[float]]) -> list[float]:
    """The values a quoted quantity of this kind may be: the figures in its unit and the inputs of its kind."""
    allowed = [
        float(f["value"])
        for f in figures
        if isinstance(f.get("unit"), str)
        and quantity.unit(f["unit"])
        and isinstance(f.get("value"), int | float)
        and not isinstance(f.get("value"), bool)
    ]
    return allowed + [v for flag, values in inputs.items() if quantity.flag(flag) for v in values]


def _quantities(sentence: str) -> Iterable[tuple[Quantity, re.Match[str], int]]:
    """Each quantity the sentence quotes: its kind, the match and the group holding the number (ratios left out)."""
    for quantity in QUANTITIES:
        for match in quantity.pattern.finditer(sentence):
            group = next(i for i, g in enumerate(match.groups(), start=1) if g is not None)
            if not (quantity.kind == "tokens" and _ratio(sentence, match.span(0))):
                yield quantity, match, group


def quoted(sentences: Iterable[tuple[int, str]]) -> int:
    """How many costs, prices, replica counts, hour counts and token counts the sentences quote."""
    return sum(1 for _, sentence in sentences for _ in _quantities(sentence))


def misquoted(
    sentences: Iterable[tuple[int, str]], figures: list[dict[str, Any]], inputs: dict[str, list[float]]
) -> list[tuple[int, str, str, str]]:
    """(line, sentence, number as written, kind) for every quoted quantity that is no figure, no input and no
    arithmetic shown on them."""
    arithmetic = Arithmetic(known_values(figures, inputs))
    allowed_for = {quantity.kind: _allowed(quantity, figures, inputs) for quantity in QUANTITIES}
    out = []
    for line, sentence in sentences:
        for quantity, match, group in _quantities(sentence):
            written = match.group(group)
            if not any(agrees(written, value) for value in allowed_for[quantity.kind]) and not arithmetic.shows(
                sentence, match.span(group)
            ):
                out.append((line, sentence, match.group(0).strip(), quantity.kind))
    return out
