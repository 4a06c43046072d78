"""The memo's prose against its figures: speeds and latencies.

Every speed or latency the text quotes must be a front-matter figure (or arithmetic shown on figures
and inputs, memo_quantities), a percentile in the text states its n, and a sentence that sells an
aggregate throughput as one user's speed is caught by its meaning: a tokens/s figure whose scope is
aggregate (or the sizing's throughput at more than one stream) in a sentence about a user. The text is
read as Markdown shows it: a paragraph's wrapped lines are one text, a table row is one sentence, a
fenced code block is not prose.
"""

from __future__ import annotations

import re
from typing import Any

from grader.criteria.memo_figures import Finding, is_number, is_token_rate, sized_by
from grader.criteria.memo_quantities import input_values, known_values, misquoted, shown_arithmetic

__all__ = ["sentences", "text_rules"]

_SPEED_IN_TEXT = re.compile(
    r"(\d[\d,]*(?:\.\d+)?)\s*(?:output\s+)?(?:tokens?|tok)\s*(?:/\s*s(?:ec)?\b|per\s+second)", re.IGNORECASE
)
_TIME_IN_TEXT = re.compile(r"(\d[\d,]*(?:\.\d+)?)\s*(ms|s)\b")
_LATENCY_WORDS = re.compile(r"\b(ttft|latency|p\d{2}|percentile)\b", re.IGNORECASE)
_PERCENTILE_WORD = re.compile(r"\bp(50|90|95|99)\b", re.IGNORECASE)
_N_STATED = re.compile(r"\bn\s*=\s*\d|\b\d[\d,]*\s+(requests|samples|runs|streams)\b", re.IGNORECASE)
_USER = re.compile(
    r"\b(per[- ]user|each user|a user|one user|every user|user's|users'|per[- ]request|"
    r"each request|per[- ]stream|each stream|one stream's|each chat|per chat)\b",
    re.IGNORECASE,
)
_NEGATION = re.compile(r"\b(not|never|no|isn't|is not|aren't)\b", re.IGNORECASE)
#: A sentence: up to a stop followed by a space and a capital, a bold mark or a bracket (or the end).
_SENTENCE = re.compile(r"\S.*?(?:[.!?](?=\s+[A-Z*(])|$)", re.DOTALL)
#: A line that starts a block of its own: a list item or a quotation.
_BLOCK_START = re.compile(r"^(?:[-*+]\s|\d+[.)]\s|>)")


def _number_in_text(text: str) -> tuple[float, int]:
    """The number as written and its decimals (so 1.40 matches 1.3959, and 2,000 is 2000)."""
    clean = text.replace(",", "")
    return float(clean), len(clean.split(".")[1]) if "." in clean else 0


def _matches(written: str, value: Any, scale: float = 1.0) -> bool:
    if not is_number(value):
        return False
    number, decimals = _number_in_text(written)
    shown = value * scale
    return bool(abs(shown - number) <= 0.5 * 10**-decimals + 1e-9 or abs(shown - number) <= 0.005 * abs(shown))


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


def _time_scale(unit: str) -> float | None:
    """How to show a latency figure in seconds, or None when its unit is not a time."""
    head = unit.strip().split(" ")[0].lower()
    return {"s": 1.0, "ms": 0.001, "seconds": 1.0}.get(head)


def text_rules(figures: list[dict[str, Any]], body: str, first_line: int = 1, inputs: Any = None) -> list[Finding]:
    """Speeds and latencies the text quotes must be front-matter figures (or arithmetic shown on figures and
    inputs), and honest about scope; costs, prices, replicas, hours and tokens must be figures or the sizing
    command's inputs (memo_quantities)."""
    known = known_values(figures, input_values(inputs))
    sized = sized_by(inputs)
    out: list[Finding] = [
        Finding(
            "text-matches-front-matter",
            None,
            f"{written} in the text is not a {kind} figure of the front matter nor an input of sizing_inputs",
            line=line,
            quote=sentence,
        )
        for line, sentence, written, kind in misquoted(sentences(body, first_line), figures, input_values(inputs))
    ]
    speeds = [f for f in figures if is_token_rate(f)]
    aggregates = [f for f in speeds if f.get("scope") == "aggregate"]
    times = [f for f in figures if isinstance(f.get("unit"), str) and _time_scale(f["unit"]) is not None]
    for line, sentence in sentences(body, first_line):
        for match in _SPEED_IN_TEXT.finditer(sentence):
            written = match.group(1)
            # A figure, or the throughput input, as the brief says of every quoted number.
            stated = any(_matches(written, f.get("value")) for f in speeds) or (
                sized is not None and _matches(written, sized.throughput)
            )
            if not stated and not shown_arithmetic(written, sentence, match.span(1), known):
                out.append(
                    Finding(
                        "text-matches-front-matter",
                        None,
                        f"{written} tokens/s in the text is not a figure of the front matter",
                        line=line,
                        quote=sentence,
                    )
                )
            if not _USER.search(sentence) or _NEGATION.search(sentence):
                continue
            agg = next((f for f in aggregates if _matches(written, f.get("value"))), None)
            # The replica's throughput at more than one stream, whatever figure (a per_user one too) has its value.
            if sized is not None and (sized.streams or 0) > 1 and _matches(written, sized.throughput):
                out.append(
                    Finding(
                        "per-user-not-aggregate",
                        str(agg.get("name")) if agg else None,
                        f"{written} tokens/s is the aggregate throughput the sizing was run with, shared by "
                        f"{sized.streams} streams, presented as one user's speed",
                        line=line,
                        quote=sentence,
                    )
                )
                continue
            if sized is not None and sized.streams == 1 and _matches(written, sized.throughput):
                continue  # at one stream the aggregate is that user's speed
            per_user = any(_matches(written, f.get("value")) for f in speeds if f.get("scope") == "per_user")
            if agg and not per_user:
                out.append(
                    Finding(
                        "per-user-not-aggregate",
                        str(agg.get("name")),
                        f"{written} tokens/s is aggregate figure '{agg.get('name')}' presented as one user's speed",
                        line=line,
                        quote=sentence,
                    )
                )
        if _LATENCY_WORDS.search(sentence):
            for match in _TIME_IN_TEXT.finditer(sentence):
                written, unit = match.group(1), match.group(2)
                scale = 1000.0 if unit == "ms" else 1.0
                if not any(
                    _matches(written, f.get("value"), scale * (_time_scale(f["unit"]) or 1.0)) for f in times
                ) and not shown_arithmetic(written, sentence, match.span(1), known):
                    out.append(
                        Finding(
                            "text-matches-front-matter",
                            None,
                            f"{written} {unit} in the text is not a latency figure of the front matter",
                            line=line,
                            quote=sentence,
                        )
                    )
            if _PERCENTILE_WORD.search(sentence) and _TIME_IN_TEXT.search(sentence) and not _N_STATED.search(sentence):
                out.append(
                    Finding(
                        "percentile-sample-size", None, "a percentile quoted without its n", line=line, quote=sentence
                    )
                )
    return out
