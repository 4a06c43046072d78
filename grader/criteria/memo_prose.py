"""The memo's prose against its figures: speeds and latencies.

Every speed or latency the text quotes must be a front-matter figure (or arithmetic shown on figures
and inputs, memo_arithmetic), a percentile in the text states its n, and a sentence that gives an
aggregate throughput to a user is caught by its meaning (memo_users): a tokens/s figure whose scope is
aggregate (or the sizing's throughput at more than one stream) said of a user, not set beside a user's
speed. The text is read as Markdown shows it (memo_text.sentences).
"""

from __future__ import annotations

import re
from typing import Any

from grader.criteria.memo_arithmetic import Arithmetic
from grader.criteria.memo_figures import BrokenRule, Sized, is_token_rate, sized_by
from grader.criteria.memo_quantities import input_values, known_values, misquoted, quoted
from grader.criteria.memo_text import SPEED_IN_TEXT, TIME_IN_TEXT, matches, sentences, time_scale
from grader.criteria.memo_users import given_to_a_user

__all__ = ["numbers_read", "percentiles_quoted", "sentences", "text_rules"]

_LATENCY_WORDS = re.compile(r"\b(ttft|latency|p\d{2}|percentile)\b", re.IGNORECASE)
_PERCENTILE_WORD = re.compile(r"\bp(50|90|95|99)\b", re.IGNORECASE)
_N_STATED = re.compile(r"\bn\s*=\s*\d|\b\d[\d,]*\s+(requests|samples|runs|streams)\b", re.IGNORECASE)


def percentiles_quoted(body: str, first_line: int = 1) -> list[tuple[int, str]]:
    """The sentences of the text that quote a percentile (p50, p90, p95, p99) of a time."""
    return [
        (line, sentence)
        for line, sentence in sentences(body, first_line)
        if _PERCENTILE_WORD.search(sentence) and TIME_IN_TEXT.search(sentence)
    ]


def numbers_read(body: str, first_line: int = 1) -> int:
    """How many numbers the text rule reads in the text: speeds, latencies, costs, prices, replica counts, hour
    counts and token counts (none: the rule has nothing to judge)."""
    prose = sentences(body, first_line)
    speeds = sum(len(SPEED_IN_TEXT.findall(sentence)) for _, sentence in prose)
    times = sum(len(TIME_IN_TEXT.findall(s)) for _, s in prose if _LATENCY_WORDS.search(s))
    return quoted(prose) + speeds + times


def _aggregate(written: str, speeds: list[dict[str, Any]], sized: Sized | None) -> tuple[str | None, str] | None:
    """What aggregate a speed in the text is (the figure's name, or None for the sizing's throughput, and why),
    or None when it is none: a per_user figure, or the throughput at one stream, is a user's speed."""
    if sized is not None and (sized.streams or 0) > 1 and matches(written, sized.throughput):
        agg = next((f for f in speeds if f.get("scope") == "aggregate" and matches(written, f.get("value"))), None)
        why = (
            f"{written} tokens/s is the aggregate throughput the sizing was run with, shared by "
            f"{sized.streams} streams, presented as one user's speed"
        )
        return (str(agg.get("name")) if agg else None), why
    if sized is not None and sized.streams == 1 and matches(written, sized.throughput):
        return None  # at one stream the aggregate is that user's speed
    if any(matches(written, f.get("value")) for f in speeds if f.get("scope") == "per_user"):
        return None
    agg = next((f for f in speeds if f.get("scope") == "aggregate" and matches(written, f.get("value"))), None)
    if agg is None:
        return None
    name = str(agg.get("name"))
    return name, f"{written} tokens/s is aggregate figure '{name}' presented as one user's speed"


def text_rules(figures: list[dict[str, Any]], body: str, first_line: int = 1, inputs: Any = None) -> list[BrokenRule]:
    """Speeds and latencies the text quotes must be front-matter figures (or arithmetic shown on figures and
    inputs), and honest about scope; costs, prices, replicas, hours and tokens must be figures or the sizing
    command's inputs (memo_quantities)."""
    arithmetic = Arithmetic(known_values(figures, input_values(inputs)))
    sized = sized_by(inputs)
    prose = sentences(body, first_line)
    out: list[BrokenRule] = [
        BrokenRule(
            "text-matches-front-matter",
            None,
            f"{written} in the text is not a {kind} figure of the front matter nor an input of sizing_inputs",
            line=line,
            quote=sentence,
        )
        for line, sentence, written, kind in misquoted(prose, figures, input_values(inputs))
    ]
    speeds = [f for f in figures if is_token_rate(f)]
    times = [f for f in figures if isinstance(f.get("unit"), str) and time_scale(f["unit"]) is not None]
    for line, sentence in prose:
        quoted = list(SPEED_IN_TEXT.finditer(sentence))
        aggregate = {m.span(1): _aggregate(m.group(1), speeds, sized) for m in quoted}
        for match in quoted:
            written = match.group(1)
            # A figure, or the throughput input, as the brief says of every quoted number.
            stated = any(matches(written, f.get("value")) for f in speeds) or (
                sized is not None and matches(written, sized.throughput)
            )
            if not stated and not arithmetic.shows(sentence, match.span(1)):
                out.append(
                    BrokenRule(
                        "text-matches-front-matter",
                        None,
                        f"{written} tokens/s in the text is not a figure of the front matter",
                        line=line,
                        quote=sentence,
                    )
                )
            what = aggregate[match.span(1)]
            beside = any(what is None for span, what in aggregate.items() if span != match.span(1))
            if what is not None and given_to_a_user(sentence, match.span(1), match.end(), beside):
                out.append(BrokenRule("per-user-not-aggregate", what[0], what[1], line=line, quote=sentence))
        if _LATENCY_WORDS.search(sentence):
            for match in TIME_IN_TEXT.finditer(sentence):
                written, unit = match.group(1), match.group(2)
                scale = 1000.0 if unit == "ms" else 1.0
                if not any(
                    matches(written, f.get("value"), scale * (time_scale(f["unit"]) or 1.0)) for f in times
                ) and not arithmetic.shows(sentence, match.span(1)):
                    out.append(
                        BrokenRule(
                            "text-matches-front-matter",
                            None,
                            f"{written} {unit} in the text is not a latency figure of the front matter",
                            line=line,
                            quote=sentence,
                        )
                    )
            if _PERCENTILE_WORD.search(sentence) and TIME_IN_TEXT.search(sentence) and not _N_STATED.search(sentence):
                out.append(
                    BrokenRule(
                        "percentile-sample-size", None, "a percentile quoted without its n", line=line, quote=sentence
                    )
                )
    return out
