"""How the memo's checks read its prose: sentences as Markdown shows them, and the speeds, times and numbers in them.

A paragraph's wrapped lines are one text, a table row is one sentence, a fenced code block is not prose.
A number is read as written (2,000 is 2000; 1.40 has two decimals) and agrees with a value at the precision
shown or within half a percent (1.40 is 1.3959; 2,153 is 2152.80).
"""

from __future__ import annotations

import math
import re
from typing import Any

from grader.criteria.memo_figures import is_number

__all__ = [
    "SPEED_IN_TEXT",
    "TIME_IN_TEXT",
    "agrees",
    "matches",
    "sentences",
    "shown",
    "time_scale",
]

#: A speed the text quotes: a number of tokens per second (group 1 is the number as written).
SPEED_IN_TEXT = re.compile(
    r"(\d[\d,]*(?:\.\d+)?)\s*(?:output\s+)?(?:tokens?|tok)\s*(?:/\s*s(?:ec)?\b|per\s+second)", re.IGNORECASE
)
#: A time the text quotes, in seconds or milliseconds (group 1 the number, group 2 the unit).
TIME_IN_TEXT = re.compile(r"(\d[\d,]*(?:\.\d+)?)\s*(ms|s)\b")
#: A sentence: up to a stop followed by a space and a capital, a bold mark or a bracket (or the end).
_SENTENCE = re.compile(r"\S.*?(?:[.!?](?=\s+[A-Z*(])|$)", re.DOTALL)
#: A line that starts a block of its own: a list item or a quotation.
_BLOCK_START = re.compile(r"^(?:[-*+]\s|\d+[.)]\s|>)")


def shown(written: str) -> tuple[float, int]:
    """The number as written and its decimals (so 1.40 matches 1.3959, and 2,000 is 2000)."""
    clean = written.replace(",", "")
    return float(clean), len(clean.split(".")[1]) if "." in clean else 0


def agrees(written: str, value: float) -> bool:
    """The written number is `value` at the precision shown (1.40 is 1.3959), or within half a percent of it
    (2,153 is 2152.80)."""
    number, decimals = shown(written)
    return math.isfinite(value) and (
        abs(value - number) <= 0.5 * 10**-decimals + 1e-9 or abs(value - number) <= 0.005 * abs(value)
    )


def matches(written: str, value: Any, scale: float = 1.0) -> bool:
    """The written number is a figure's `value` shown in a unit `scale` times its own (ms for s: 1000)."""
    return is_number(value) and agrees(written, value * scale)


def time_scale(unit: str) -> float | None:
    """How to show a latency figure in seconds, or None when its unit is not a time."""
    head = unit.strip().split(" ")[0].lower()
    return {"s": 1.0, "ms": 0.001, "seconds": 1.0}.get(head)


def sentences(body: str, first_line: int) -> list[tuple[int, str]]:
    """(line, sentence) pairs of the prose, each sentence with the line it starts on. A paragraph's lines are
    read as one text, as Markdown shows them: a sentence wrapped onto the next line ("each\nuser sees") is one
    sentence. Sentences never cross a blank line, a heading or a list item's start; a table row is one sentence,
    and a fenced code block (a command line, say) is not prose."""
    out: list[tuple[int, str]] = []
    paragraph: list[tuple[int, str]] = []
    fenced = False
    for index, raw in enumerate(body.splitlines()):
        line = raw.strip()
        if line.startswith(("```", "~~~")):
            fenced = not fenced
        if fenced or not line or line.startswith(("```", "~~~", "|", "#")) or _BLOCK_START.match(line):
            out += _split(paragraph)
            paragraph = []
        if fenced or line.startswith(("```", "~~~")):
            continue
        if line.startswith(("|", "#")):  # a table row or a heading: a sentence of its own
            out.append((first_line + index, line))
        elif line:
            paragraph.append((first_line + index, line))
    return out + _split(paragraph)


def _split(paragraph: list[tuple[int, str]]) -> list[tuple[int, str]]:
    """A paragraph's (line, text) lines as (line, sentence): the line is the one each sentence starts on."""
    text, starts = "", []
    for number, words in paragraph:
        starts.append((len(text), number))
        text += words + " "
    out = []
    for match in _SENTENCE.finditer(text):
        first = next(number for offset, number in reversed(starts) if offset <= match.start())
        out.append((first, match.group(0).strip()))
    return out
