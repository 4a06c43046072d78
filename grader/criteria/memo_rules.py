"""Machine checks of a sizing memo's front matter: the honesty rules of contract 1.

A memo (Markdown) opens with YAML front matter listing every figure it quotes, each with a value,
a unit, a provenance and, for speeds, a scope. These checks catch the dishonest numbers the seed
names: a percentile without its sample size, a p99 from fewer than 100 requests not called the
maximum, aggregate throughput passed off as one user's speed, production sized on a laptop or
fake-server run. They read the labels first (a figure's unit, scope, provenance, status and what it is derived from)
and then the prose: a speed or a latency quoted in the text must be one of the front matter's
figures, and a sentence that sells an aggregate throughput as one user's speed is caught by its
meaning (a tokens/s figure whose scope is aggregate, in a sentence about a user), not by a word.
The memo's own sizing says how many streams share its throughput (`sizing_inputs`: `throughput` at
`concurrency` streams): above one stream that value is no user's speed, whatever a figure that
carries it says it is derived from or what its unit says; a user's share is the throughput over
the streams. A person still reads the memo.

Each finding has a `severity`: "error" for the contract's rules (the grader scores them) and
"advice" for checks the contract does not state (reported, never scored).
"""

from __future__ import annotations

import math
import re
from dataclasses import asdict, dataclass
from typing import Any

from grader.criteria.memo_quantities import input_values, known_values, misquoted, shown_arithmetic
from grader.shared.yaml_files import YamlError
from grader.shared.yaml_files import split_front_matter as read_front_matter

__all__ = [
    "PROVENANCES",
    "SCOPES",
    "STATUSES",
    "Finding",
    "MemoError",
    "check_figures",
    "check_memo",
    "errors",
    "split_front_matter",
]

PROVENANCES = ("measured on fake server", "laptop", "target GPU", "invented sample", "assumption")
SCOPES = ("aggregate", "per_user", "n/a")
#: How far a figure is from a measurement: a placeholder may stand in for one, honestly labelled.
STATUSES = ("measured", "placeholder", "not measured", "derived")
#: Provenances that describe this machine, not the production GPU.
LOCAL = ("measured on fake server", "laptop")
#: Provenances a production sizing may rest on, the last two only as a stated placeholder.
SIZING_OK = ("target GPU", "invented sample", "assumption")

_FIELDS = frozenset(
    {"name", "value", "unit", "provenance", "scope", "sample_size", "percentile", "status", "derived_from"}
)
_TOP = frozenset({"contract", "figures", "sizing_inputs", "loadgen_results"})
_TOKEN_RATE = re.compile(r"(tok(en)?s?\s*/\s*s(ec)?\b|tok(en)?s?\s+per\s+second)", re.IGNORECASE)
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
_NAME = re.compile(r"^[a-z][a-z0-9_]*$")
_RATE = re.compile(r"(/\s*s\b|/\s*sec|per\s+second|tok/s|tokens/s)", re.IGNORECASE)
_SIZES_PRODUCTION = re.compile(r"replica|production|sizing", re.IGNORECASE)
#: A sentence: up to a stop followed by a space and a capital, a bold mark or a bracket (or the end).
_SENTENCE = re.compile(r"\S.*?(?:[.!?](?=\s+[A-Z*(])|$)", re.DOTALL)
#: A line that starts a block of its own: a list item or a quotation.
_BLOCK_START = re.compile(r"^(?:[-*+]\s|\d+[.)]\s|>)")


class MemoError(ValueError):
    """The memo has no front matter, or it is not a YAML mapping."""


@dataclass(frozen=True)
class Finding:
    """One broken rule: which, on which figure (None for the memo as a whole), and why."""

    rule: str
    figure: str | None
    message: str
    severity: str = "error"
    line: int | None = None  # 1-based line of the memo the finding quotes
    quote: str = ""

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def split_front_matter(text: str, source: str = "memo") -> tuple[dict[str, Any], str, int]:
    """The parsed front matter, the Markdown body after it and the body's first line (the kit's one reader)."""
    try:
        front = read_front_matter(text, source=source)
    except YamlError as exc:
        raise MemoError(str(exc)) from None
    return front.data, front.body, front.body_line


def _number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


def _fields(fig: dict[str, Any], label: str) -> list[Finding]:
    """Shape of one figure: the fields the other rules rely on."""
    out = []
    unknown = sorted(map(str, set(fig) - _FIELDS))
    if unknown:
        # Often a comma inside an unquoted flow-style value: {unit: s (TTFT, max)} makes a key "max)".
        out.append(Finding("figure-fields", label, f"unknown field(s) {', '.join(unknown)}; quote values with commas"))
    if not isinstance(fig.get("name"), str) or not _NAME.match(fig["name"]):
        out.append(Finding("figure-fields", label, "name must be a snake_case id"))
    if not _number(fig.get("value")) and not (fig.get("status") == "not measured" and "value" not in fig):
        out.append(
            Finding(
                "figure-fields",
                label,
                "value must be a finite number (it may be left out only with status: not measured)",
            )
        )
    if not isinstance(fig.get("unit"), str) or not fig["unit"].strip():
        out.append(Finding("figure-fields", label, "unit must be a non-empty string"))
    if fig.get("provenance") not in PROVENANCES:
        out.append(Finding("figure-fields", label, f"provenance must be one of {', '.join(PROVENANCES)}"))
    if fig.get("scope") is not None and fig["scope"] not in SCOPES:
        out.append(Finding("figure-fields", label, f"scope must be one of {', '.join(SCOPES)}"))
    percentile = fig.get("percentile")
    if percentile is not None and (not _number(percentile) or not 0 < percentile <= 100):
        out.append(Finding("figure-fields", label, "percentile must be a number in (0, 100]"))
    if fig.get("status") is not None and fig["status"] not in STATUSES:
        out.append(Finding("figure-fields", label, f"status must be one of {', '.join(STATUSES)}"))
    derived = fig.get("derived_from")
    if derived is not None and not (
        isinstance(derived, str) or (isinstance(derived, list) and all(isinstance(d, str) for d in derived))
    ):
        out.append(
            Finding(
                "figure-fields",
                label,
                "derived_from must be a figure name, a sizing:/loadgen: field, or a list of them",
            )
        )
    size = fig.get("sample_size")
    if size is not None and (not isinstance(size, int) or isinstance(size, bool) or size < 1):
        out.append(Finding("figure-fields", label, "sample_size must be an integer >= 1"))
    return out


def _is_rate(fig: dict[str, Any]) -> bool:
    return isinstance(fig.get("unit"), str) and bool(_RATE.search(fig["unit"]))


def _is_token_rate(fig: dict[str, Any]) -> bool:
    return isinstance(fig.get("unit"), str) and bool(_TOKEN_RATE.search(fig["unit"]))


def _placeholder(fig: dict[str, Any]) -> bool:
    return fig.get("status") == "placeholder"


def _sources(fig: dict[str, Any]) -> list[str]:
    derived = fig.get("derived_from")
    return [derived] if isinstance(derived, str) else [d for d in derived or [] if isinstance(d, str)]


def _percentile_rules(fig: dict[str, Any], label: str) -> list[Finding]:
    percentile, size = fig.get("percentile"), fig.get("sample_size")
    if percentile is None:
        return []
    if not isinstance(size, int) or isinstance(size, bool):
        return [Finding("percentile-sample-size", label, f"p{percentile:g} without its sample size (n)")]
    # Nearest rank: rank = ceil(p/100 * n). For p99 that is the last sample whenever n < 100.
    if _number(percentile) and percentile >= 99 and size >= 1 and math.ceil(percentile / 100 * size) == size:
        text = f"{fig.get('name', '')} {fig.get('unit', '')}".lower()
        if "max" not in text:
            return [
                Finding(
                    "p99-is-max",
                    label,
                    f"p{percentile:g} of {size} samples is the maximum; say so in the name or unit ('max')",
                )
            ]
    return []


@dataclass(frozen=True)
class _Sized:
    """The aggregate throughput the memo's sizing was run with (`sizing_inputs`), and the streams it was at."""

    throughput: float
    streams: int | None  # `concurrency`; None when the memo does not state it

    def shared(self, value: Any) -> bool:
        """`value` is this aggregate while more than one stream shares it: no user sees it."""
        return self.streams is not None and self.streams > 1 and _number(value) and math.isclose(value, self.throughput)

    def alone(self, value: Any) -> bool:
        """`value` is this aggregate at one stream: that one user's speed, rightly."""
        return self.streams == 1 and _number(value) and math.isclose(value, self.throughput)


def _sized(inputs: Any) -> _Sized | None:
    if not isinstance(inputs, dict) or not _number(inputs.get("throughput")):
        return None
    streams = inputs.get("concurrency")
    ok = isinstance(streams, int) and not isinstance(streams, bool) and streams >= 1
    return _Sized(float(inputs["throughput"]), streams if ok else None)


def _scope_rules(
    fig: dict[str, Any], label: str, aggregates: list[dict[str, Any]], sized: _Sized | None = None
) -> list[Finding]:
    out = []
    if _is_rate(fig) and fig.get("scope") not in ("aggregate", "per_user"):
        out.append(Finding("speed-scope", label, "a speed needs scope 'aggregate' or 'per_user'"))
    if fig.get("scope") == "per_user":
        # By its scope field and its value, never by a word of its name or unit ("per-user throughput" is a fair
        # name). The replica's throughput at more than one stream is no user's speed, whatever the figure says it
        # is derived from: a user sees the throughput divided by the streams. At one stream a user's speed is the
        # aggregate's, and both figures may rightly have one value.
        if sized is not None and sized.shared(fig.get("value")):
            assert sized.streams is not None
            out.append(
                Finding(
                    "per-user-not-aggregate",
                    label,
                    f"{fig['value']:g} is the aggregate throughput the sizing was run with, shared by "
                    f"{sized.streams} streams (sizing_inputs throughput and concurrency); one user's share is "
                    f"{sized.throughput / sized.streams:.4g}",
                )
            )
            return out
        if sized is not None and sized.alone(fig.get("value")):
            return out
        # Where the memo does not say how many streams an aggregate figure was measured at, an aggregate figure
        # restated per user (derived from it, with its value) is still one: a coincidence of values is not.
        for agg in aggregates:
            if agg.get("name") in _sources(fig) and agg.get("value") == fig.get("value"):
                out.append(
                    Finding(
                        "per-user-not-aggregate",
                        label,
                        f"aggregate figure '{agg.get('name')}' restated as a per-user speed",
                    )
                )
                break
    return out


def _sizing_rules(figures: list[dict[str, Any]], body: str, sizing_inputs: Any = None) -> list[Finding]:
    out = []
    sizing = [f for f in figures if _SIZES_PRODUCTION.search(str(f.get("name", "")))]
    used = sizing_inputs.get("throughput") if isinstance(sizing_inputs, dict) else None
    for fig in figures:
        # By meaning: the throughput the memo's sizing was run with, whatever the figure is called.
        if (
            used is not None
            and fig.get("value") == used
            and _is_token_rate(fig)
            and fig.get("provenance") in LOCAL
            and not _placeholder(fig)
            and fig not in sizing
        ):
            out.append(
                Finding(
                    "production-provenance",
                    str(fig.get("name")),
                    f"the sizing's --throughput {used:g} is this figure, {fig['provenance']!r}; a laptop or "
                    "fake-server run sizes nothing in production unless labelled status: placeholder",
                )
            )
    for fig in sizing:
        if fig.get("provenance") in LOCAL and not _placeholder(fig):
            out.append(
                Finding(
                    "production-provenance",
                    str(fig.get("name")),
                    f"production sizing rests on a figure {fig['provenance']!r}; "
                    "laptop and fake-server runs test the client, not the GPU",
                )
            )
    # The capacity a sizing rests on: aggregate rates the memo states, not those it derives from the sizing
    # command's output (the load's peak demand is a result, and says nothing of where the capacity came from).
    throughputs = [
        f
        for f in figures
        if _is_rate(f) and f.get("scope") == "aggregate" and not any(s.startswith("sizing:") for s in _sources(f))
    ]
    if throughputs and not any(f.get("provenance") in SIZING_OK or _placeholder(f) for f in throughputs):
        out.append(
            Finding(
                "production-provenance",
                None,
                "every aggregate throughput comes from a laptop or the fake server, so any replica count rests on one",
            )
        )
    if any(f.get("provenance") != "target GPU" for f in sizing) and "placeholder" not in body.lower():
        out.append(
            Finding(
                "placeholder-stated",
                None,
                "sizing rests on figures not measured on the target GPU; the memo should call it a placeholder",
                "advice",
            )
        )
    return out


def check_figures(front: dict[str, Any], body: str = "", *, first_line: int = 1) -> list[Finding]:
    """Every rule on parsed front matter (and the body, for the advice that reads it)."""
    out = []
    if front.get("contract") != 1:
        out.append(Finding("front-matter", None, f"contract must be 1, got {front.get('contract')!r}"))
    figures = front.get("figures")
    if not isinstance(figures, list) or not figures:
        return out + [Finding("front-matter", None, "figures must be a non-empty list")]
    unknown = set(front) - _TOP
    if unknown:
        out.append(Finding("front-matter", None, f"unknown keys: {', '.join(sorted(map(str, unknown)))}"))
    good = [f for f in figures if isinstance(f, dict)]
    if len(good) < len(figures):
        out.append(Finding("figure-fields", None, "every figure must be a mapping"))
    aggregates = [f for f in good if f.get("scope") == "aggregate"]
    sized = _sized(front.get("sizing_inputs"))
    seen: set[str] = set()
    for index, fig in enumerate(good):
        label = str(fig.get("name") or f"figures[{index}]")
        if label in seen:
            out.append(Finding("figure-fields", label, "name used twice"))
        seen.add(label)
        out += _fields(fig, label) + _percentile_rules(fig, label) + _scope_rules(fig, label, aggregates, sized)
    return (
        out
        + _sizing_rules(good, body, front.get("sizing_inputs"))
        + _text_rules(good, body, first_line, front.get("sizing_inputs"))
    )


def _number_in_text(text: str) -> tuple[float, int]:
    """The number as written and its decimals (so 1.40 matches 1.3959, and 2,000 is 2000)."""
    clean = text.replace(",", "")
    return float(clean), len(clean.split(".")[1]) if "." in clean else 0


def _matches(written: str, value: Any, scale: float = 1.0) -> bool:
    if not _number(value):
        return False
    number, decimals = _number_in_text(written)
    shown = value * scale
    return bool(abs(shown - number) <= 0.5 * 10**-decimals + 1e-9 or abs(shown - number) <= 0.005 * abs(shown))


def _sentences(body: str, first_line: int) -> list[tuple[int, str]]:
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


def _text_rules(figures: list[dict[str, Any]], body: str, first_line: int = 1, inputs: Any = None) -> list[Finding]:
    """Speeds and latencies the text quotes must be front-matter figures (or arithmetic shown on figures and
    inputs), and honest about scope; costs, prices, replicas, hours and tokens must be figures or the sizing
    command's inputs (memo_quantities)."""
    known = known_values(figures, input_values(inputs))
    sized = _sized(inputs)
    out: list[Finding] = [
        Finding(
            "text-matches-front-matter",
            None,
            f"{written} in the text is not a {kind} figure of the front matter nor an input of sizing_inputs",
            line=line,
            quote=sentence,
        )
        for line, sentence, written, kind in misquoted(_sentences(body, first_line), figures, input_values(inputs))
    ]
    speeds = [f for f in figures if _is_token_rate(f)]
    aggregates = [f for f in speeds if f.get("scope") == "aggregate"]
    times = [f for f in figures if isinstance(f.get("unit"), str) and _time_scale(f["unit"]) is not None]
    for line, sentence in _sentences(body, first_line):
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


def locate(findings: list[Finding], text: str) -> list[Finding]:
    """Findings about a front-matter figure get the line that declares it, quoted."""
    lines = text.splitlines()
    out = []
    for f in findings:
        if f.line is None and f.figure:
            hit = next(
                (i for i, line in enumerate(lines) if re.search(rf"\bname:\s*['\"]?{re.escape(f.figure)}\b", line)),
                None,
            )
            if hit is not None:
                f = Finding(f.rule, f.figure, f.message, f.severity, hit + 1, lines[hit].strip())
        out.append(f)
    return out


def check_memo(text: str) -> list[Finding]:
    """Every rule on a whole memo; a missing or unreadable front matter is one 'front-matter' finding."""
    try:
        front, body, first_line = split_front_matter(text)
    except MemoError as exc:
        return [Finding("front-matter", None, str(exc))]
    findings = check_figures(front, body, first_line=first_line)
    return locate(findings, text)


def errors(findings: list[Finding]) -> list[Finding]:
    """The findings the contract scores (advice left out)."""
    return [f for f in findings if f.severity == "error"]
