"""The memo's prose against its own figures: every cost, price, replica count, hour count and token count
the text quotes must be a figure of the front matter, or one of the inputs the sizing command was run
with (`sizing_inputs`, and the contract's defaults for flags left out), at the precision shown.

A memo whose text says "$1.04 per million when fully busy" while its front matter says 1.40 has two
answers; a reader acts on the text. Speeds and latencies are checked beside these
(memo_prose.text_rules). Arithmetic written out with bare numbers ("4,305.60 / 30 / 0.048") is left
alone: only a number carrying its unit (`$`, `USD`, `replicas`, `hours`, `tokens`) is a quoted figure.

An honest memo shows its arithmetic: in "4 x 1,800 = 7,200 tokens" the 7,200 is no figure, but the
reader can check it from the two numbers beside it. So a quoted number that is the product, quotient,
sum or difference of two other numbers of the same sentence, each a figure or an input at the
precision shown, is a figure too (`shown_arithmetic`). One operation, not a chain: the reader checks
a step at a glance, and every further step would let more misquotes pass as a coincidence.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

__all__ = ["QUANTITIES", "Quantity", "input_values", "known_values", "misquoted", "shown_arithmetic"]

_NUMBER = r"(\d[\d,]*(?:\.\d+)?)"
#: Any number written in a sentence, as an operand of arithmetic shown there (not a digit of a name: p99, H100, 1e6).
_ANY_NUMBER = re.compile(r"(?<![\w.,])\d(?:[\d,]*\d)?(?:\.\d+)?(?![eE]\d)")
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


def _shown(written: str) -> tuple[float, int]:
    clean = written.replace(",", "")
    return float(clean), len(clean.split(".")[1]) if "." in clean else 0


def _agrees(written: str, value: float) -> bool:
    """The written number is `value` at the precision shown (1.40 is 1.3959; 2,153 is 2152.80)."""
    number, decimals = _shown(written)
    return math.isfinite(value) and (
        abs(value - number) <= 0.5 * 10**-decimals + 1e-9 or abs(value - number) <= 0.005 * abs(value)
    )


def known_values(figures: list[dict[str, Any]], inputs: dict[str, list[float]]) -> list[float]:
    """Every number the memo states: each figure's value and each sizing input, whatever its kind (an operand of
    arithmetic may be a count of turns beside a count of tokens)."""
    values = {
        float(f["value"])
        for f in figures
        if isinstance(f.get("value"), int | float) and not isinstance(f.get("value"), bool)
    }
    values.update(v for numbers in inputs.values() for v in numbers)
    return sorted(v for v in values if math.isfinite(v))


def _results(a: float, b: float) -> Iterable[float]:
    yield from (a * b, a + b, a - b, b - a)
    if b:
        yield a / b
    if a:
        yield b / a


def shown_arithmetic(written: str, sentence: str, span: tuple[int, int], known: list[float]) -> bool:
    """Whether `written` (the number at `span` of `sentence`) is the product, quotient, sum or difference of two
    other numbers written in the sentence, each a figure or an input at the precision shown."""
    operands: list[list[float]] = []
    for match in _ANY_NUMBER.finditer(sentence):
        if match.start() < span[1] and span[0] < match.end():
            continue  # the number itself
        stated = [v for v in known if _agrees(match.group(0), v)]
        if stated:  # as the memo states it, or as the reader sees it written
            operands.append([*stated, _shown(match.group(0))[0]])
    return any(
        _agrees(written, result)
        for i, left in enumerate(operands)
        for right in operands[i + 1 :]
        for a in left
        for b in right
        for result in _results(a, b)
    )


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


def misquoted(
    sentences: Iterable[tuple[int, str]], figures: list[dict[str, Any]], inputs: dict[str, list[float]]
) -> list[tuple[int, str, str, str]]:
    """(line, sentence, number as written, kind) for every quoted quantity that is no figure, no input and no
    arithmetic shown on them."""
    known = known_values(figures, inputs)
    allowed_for = {quantity.kind: _allowed(quantity, figures, inputs) for quantity in QUANTITIES}
    out = []
    for line, sentence in sentences:
        for quantity in QUANTITIES:
            allowed = allowed_for[quantity.kind]
            for match in quantity.pattern.finditer(sentence):
                group = next(i for i, g in enumerate(match.groups(), start=1) if g is not None)
                written = match.group(group)
                if not any(_agrees(written, value) for value in allowed) and not shown_arithmetic(
                    written, sentence, match.span(group), known
                ):
                    out.append((line, sentence, match.group(0).strip(), quantity.kind))
    return out
