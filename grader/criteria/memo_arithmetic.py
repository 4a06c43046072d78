"""Arithmetic a memo's sentence shows on its own figures and inputs, read the way a reader checks it.

In "a 4-turn chat carries at most 4 x 1,800 = 7,200 tokens" the 7,200 is no figure, yet the reader checks
it from the numbers beside it; and 1,800, no figure either, is 1,500 + 300, a turn's input and output
tokens. So a number written in a sentence is accepted there when it is
- a figure or an input, at the precision shown, or a unit's conversion (60, 24, 30 days, 3,600 s, a million);
- an operand (written beside +, -, x or /) that is the sum, difference, product or quotient of two figures
  or inputs (a sum or a difference adds two of one kind: tokens to tokens, never tokens to dollars), at the
  precision shown with no half percent: exact, or rounded when it shows four digits or more (37.19 is
  595 / 16; a short rounded number nobody stated would match some pair by chance);
- the result of an operation on numbers already accepted there: two of them by +, -, x or /, or an
  expression written before `=` whose every number is accepted.
Accepting goes on until nothing more is, so shown arithmetic may chain: a result is the next step's operand
(`4 x 1,800 = 7,200`, then `7,200 x 2,000 = ...`). A number is never its own operand, and an operation that
gives back one of its operands (x 1, + 0) shows nothing. A quoted quantity none of these reach is no figure,
whatever else the sentence says.
"""

from __future__ import annotations

import bisect
import math
import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass

from grader.criteria.memo_text import agrees, shown

__all__ = ["CONVERSIONS", "Arithmetic", "Known"]

#: Unit conversions a sentence may multiply or divide by without their being figures.
CONVERSIONS = (24.0, 30.0, 60.0, 100.0, 1000.0, 3600.0, 1e6, 1e9)
_TOKEN = re.compile(
    r"(?P<num>(?<![\w.])\d(?:[\d,]*\d)?(?:\.\d+)?(?:[eE][+-]?\d+)?(?:\s?%|[kKM](?![A-Za-z]))?)"
    r"|(?P<op>[×*·÷+−]|(?<![A-Za-z])/(?![A-Za-z])|(?<!\w)x(?!\w)|(?<=\s)[-–](?=\s))"
    r"|(?P<eq>=|≈)"
    r"|(?P<open>\()|(?P<close>\))"
    r"|(?P<word>[A-Za-z][A-Za-z'’]*)"
    r"|(?P<stop>[,;:.!?])"
)
_ROUNDED_DIGITS = 4  # an operand nobody stated may be a rounded result when it shows this many digits
_UNIT_WORDS = 3  # words a number may carry before its operator ("4 turns x", "$2,152.80 a month /")


@dataclass(frozen=True)
class Known:
    """A figure's value or an input's, with what it counts: a sum or a difference takes two of one kind."""

    value: float
    kind: str


@dataclass(frozen=True)
class _Token:
    kind: str  # num, op, eq, open, close, word, stop
    text: str
    start: int
    end: int

    @property
    def digits(self) -> str:
        """A number token's digits as written, without its percent sign or its k or M."""
        return self.text.rstrip("%kKM ").strip()

    @property
    def scale(self) -> float:
        """What the reader multiplies the digits by: 25% is 0.25, 8k is 8,000, 1M a million."""
        return {"%": 0.01, "k": 1e3, "K": 1e3, "M": 1e6}.get(self.text[-1], 1.0)

    @property
    def value(self) -> float:
        return shown(self.digits)[0] * self.scale

    def agrees(self, value: float) -> bool:
        """The number is `value` at the precision shown (a percentage also as the figure it is: 25% is 25)."""
        return agrees(self.digits, value / self.scale) or (self.scale != 1.0 and agrees(self.digits, value))


def _tokens(sentence: str) -> list[_Token]:
    """The sentence's numbers, operators, brackets and stops, with a number's unit words dropped when an
    operator follows them ("4 turns x 1,800 tokens = 7,200" reads 4 x 1,800 = 7,200)."""
    raw = [_Token(str(m.lastgroup), m.group(0), m.start(), m.end()) for m in _TOKEN.finditer(sentence) if m.lastgroup]
    out: list[_Token] = []
    i = 0
    while i < len(raw):
        out.append(raw[i])
        if raw[i].kind == "num":
            j = i + 1
            while j < len(raw) and raw[j].kind == "word" and j - i <= _UNIT_WORDS:
                j += 1
            if j > i + 1 and j < len(raw) and raw[j].kind in ("op", "eq", "close"):
                i = j
                continue
        i += 1
    return out


def _results(a: float, b: float) -> Iterator[float]:
    """What two numbers make, leaving out the identities (x 1, / 1, + 0), which show nothing."""
    for result in (a * b, a + b, a - b, b - a, a / b if b else math.nan, b / a if a else math.nan):
        if math.isfinite(result) and not math.isclose(result, a) and not math.isclose(result, b):
            yield result


class _Expression:
    """A written expression's value and its numbers (indexes into the sentence's tokens), or None."""

    def __init__(self, tokens: list[_Token], start: int, end: int) -> None:
        self.tokens, self.at, self.end = tokens, start, end
        self.leaves: list[int] = []

    def parse(self, values: dict[int, float]) -> float | None:
        try:
            value = self._sum(values)
        except ValueError:
            return None
        return value if self.at == self.end and self.leaves else None

    def _peek(self) -> _Token | None:
        return self.tokens[self.at] if self.at < self.end else None

    def _sum(self, values: dict[int, float]) -> float:
        value = self._product(values)
        while (t := self._peek()) is not None and t.kind == "op" and t.text in "+-−–":
            self.at += 1
            value = value + self._product(values) if t.text == "+" else value - self._product(values)
        return value

    def _product(self, values: dict[int, float]) -> float:
        value = self._factor(values)
        while (t := self._peek()) is not None and t.kind == "op" and t.text not in "+-−–":
            self.at += 1
            right = self._factor(values)
            if t.text in "/÷":
                if right == 0:
                    raise ValueError("division by zero")
                value /= right
            else:
                value *= right
        return value

    def _factor(self, values: dict[int, float]) -> float:
        t = self._peek()
        if t is None:
            raise ValueError("end of expression")
        self.at += 1
        if t.kind == "open":
            value = self._sum(values)
            if (close := self._peek()) is None or close.kind != "close":
                raise ValueError("unclosed bracket")
            self.at += 1
            return value
        if t.kind == "num":
            self.leaves.append(self.at - 1)
            return values[self.at - 1]
        raise ValueError(f"unexpected {t.text!r}")


class Arithmetic:
    """What a memo's sentences may show arithmetic on: its figures and inputs (built once per memo)."""

    def __init__(self, known: Iterable[Known]) -> None:
        pairs = [k for k in known if math.isfinite(k.value)]
        self.known = sorted({k.value for k in pairs})
        derived: set[float] = set()
        for i, p in enumerate(pairs):
            for q in pairs[i + 1 :]:  # two of them: a figure with itself (squared, doubled) is no pair
                derived.update((p.value * q.value, p.value / q.value if q.value else math.nan))
                derived.add(q.value / p.value if p.value else math.nan)
                if p.kind == q.kind:
                    derived.update((p.value + q.value, abs(p.value - q.value)))
        self.derived = sorted(v for v in derived if math.isfinite(v))

    def shows(self, sentence: str, span: tuple[int, int]) -> bool:
        """Whether the number at `span` of `sentence` is arithmetic the sentence shows on figures and inputs."""
        tokens = _tokens(sentence)
        at = next((i for i, t in enumerate(tokens) if t.kind == "num" and t.start < span[1] and span[0] < t.end), None)
        if at is None:
            return False
        if self._operand(tokens, at) and self._derived(tokens[at]):
            return True
        accepted = self._accepted(tokens, skip=at)
        return self._result(tokens, at, accepted)

    # --- what a sentence accepts --------------------------------------------------------------------------

    def _derived(self, token: _Token) -> bool:
        """Whether the number is the sum, difference, product or quotient of two figures or inputs at the precision
        shown, with no half percent: exactly (1,800 is 1,500 + 300), or rounded when it shows four significant
        digits or more (37.19 is 595 / 16). A short rounded operand nobody stated would match too much by chance."""
        digits, decimals = token.digits, shown(token.digits)[1]
        half = (0.5 * 10**-decimals + 1e-9) * token.scale
        lo = bisect.bisect_left(self.derived, token.value - half)
        hi = bisect.bisect_right(self.derived, token.value + half)
        rounded_ok = len(digits.replace(",", "").replace(".", "").lstrip("0")) >= _ROUNDED_DIGITS
        return any(rounded_ok or math.isclose(v, token.value, rel_tol=1e-9, abs_tol=1e-12) for v in self.derived[lo:hi])

    @staticmethod
    def _operand(tokens: list[_Token], at: int) -> bool:
        before = tokens[at - 1] if at > 0 else None
        after = tokens[at + 1] if at + 1 < len(tokens) else None
        return (before is not None and before.kind == "op") or (after is not None and after.kind == "op")

    def _accepted(self, tokens: list[_Token], skip: int) -> dict[int, list[float]]:
        """Each accepted number's index and the values it may stand for, grown until nothing more is accepted."""
        accepted: dict[int, list[float]] = {}
        for i, t in enumerate(tokens):
            if t.kind != "num" or i == skip:
                continue
            stated = [v for v in self.known if t.agrees(v)]
            if stated or any(math.isclose(t.value, c) for c in CONVERSIONS):
                accepted[i] = [*stated, t.value]
            elif self._operand(tokens, i) and self._derived(t):
                accepted[i] = [t.value]
        grown = True
        while grown:
            grown = False
            for i, t in enumerate(tokens):
                if t.kind == "num" and i != skip and i not in accepted and self._result(tokens, i, accepted):
                    accepted[i] = [t.value]
                    grown = True
        return accepted

    def _result(self, tokens: list[_Token], at: int, accepted: dict[int, list[float]]) -> bool:
        """Whether the number at `at` is what two accepted numbers make, or what an expression of accepted
        numbers written before `=` comes to."""
        number = tokens[at]
        others = [values for i, values in accepted.items() if i != at]
        for n, left in enumerate(others):
            for right in others[n + 1 :]:
                if any(number.agrees(r) for a in left for b in right for r in _results(a, b)):
                    return True
        return any(number.agrees(value) for value in self._expressions_before(tokens, at, accepted))

    @staticmethod
    def _expressions_before(tokens: list[_Token], at: int, accepted: dict[int, list[float]]) -> Iterator[float]:
        """The values of the expressions written before `= number` whose every number is accepted: the whole
        one, and each that starts later in it (a bracket or an operator opened before it is read past)."""
        if at < 2 or tokens[at - 1].kind != "eq":
            return
        start = at - 1
        while start > 0 and tokens[start - 1].kind in ("num", "op", "open", "close"):
            start -= 1
        values = {i: tokens[i].value for i in range(start, at - 1) if tokens[i].kind == "num"}
        for first in range(start, at - 1):
            expression = _Expression(tokens, first, at - 1)
            value = expression.parse(values)
            operators = any(tokens[i].kind == "op" for i in range(first, at - 1))
            identity = value is not None and any(math.isclose(value, values[i]) for i in expression.leaves)
            if value is not None and operators and not identity and all(i in accepted for i in expression.leaves):
                yield value
