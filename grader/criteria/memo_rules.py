"""Machine checks of a sizing memo's front matter: the honesty rules of contract 1.

A memo (Markdown) opens with YAML front matter listing every figure it quotes, each with a value,
a unit, a provenance and, for speeds, a scope. These checks catch the dishonest numbers the seed
names: a percentile without its sample size, a p99 from fewer than 100 requests not called the
maximum, aggregate throughput passed off as one user's speed, production sized on a laptop or
fake-server run. They read the labels first (a figure's unit, scope, provenance, status and what it
is derived from; here), then the prose (memo_prose.py: speeds and latencies; memo_quantities.py:
costs, prices, replicas, hours and tokens). The memo's own sizing says how many streams share its throughput (`sizing_inputs`: `throughput` at
`concurrency` streams): above one stream that value is no user's speed, whatever a figure that
carries it says it is derived from or what its unit says; a user's share is the throughput over
the streams. A person still reads the memo.

Each finding has a `severity`: "error" for the contract's rules (the grader scores them) and
"advice" for checks the contract does not state (reported, never scored).
"""

from __future__ import annotations

import math
import re
from typing import Any

from grader.criteria.memo_figures import BrokenRule, Sized, is_number, is_token_rate, sized_by
from grader.criteria.memo_prose import text_rules
from grader.shared.contracts import supported, version_of
from grader.shared.yaml_files import YamlError
from grader.shared.yaml_files import split_front_matter as read_front_matter

__all__ = [
    "PROVENANCES",
    "SCOPES",
    "STATUSES",
    "BrokenRule",
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
_NAME = re.compile(r"^[a-z][a-z0-9_]*$")
_RATE = re.compile(r"(/\s*s\b|/\s*sec|per\s+second|tok/s|tokens/s)", re.IGNORECASE)
_SIZES_PRODUCTION = re.compile(r"replica|production|sizing", re.IGNORECASE)


class MemoError(ValueError):
    """The memo has no front matter, or it is not a YAML mapping."""


def split_front_matter(text: str, source: str = "memo") -> tuple[dict[str, Any], str, int]:
    """The parsed front matter, the Markdown body after it and the body's first line (the kit's one reader)."""
    try:
        front = read_front_matter(text, source=source)
    except YamlError as exc:
        raise MemoError(str(exc)) from None
    return front.data, front.body, front.body_line


def _fields(fig: dict[str, Any], label: str) -> list[BrokenRule]:
    """Shape of one figure: the fields the other rules rely on."""
    out = []
    unknown = sorted(map(str, set(fig) - _FIELDS))
    if unknown:
        # Often a comma inside an unquoted flow-style value: {unit: s (TTFT, max)} makes a key "max)".
        out.append(
            BrokenRule("figure-fields", label, f"unknown field(s) {', '.join(unknown)}; quote values with commas")
        )
    if not isinstance(fig.get("name"), str) or not _NAME.match(fig["name"]):
        out.append(BrokenRule("figure-fields", label, "name must be a snake_case id"))
    if not is_number(fig.get("value")) and not (fig.get("status") == "not measured" and "value" not in fig):
        out.append(
            BrokenRule(
                "figure-fields",
                label,
                "value must be a finite number (it may be left out only with status: not measured)",
            )
        )
    if not isinstance(fig.get("unit"), str) or not fig["unit"].strip():
        out.append(BrokenRule("figure-fields", label, "unit must be a non-empty string"))
    if fig.get("provenance") not in PROVENANCES:
        out.append(BrokenRule("figure-fields", label, f"provenance must be one of {', '.join(PROVENANCES)}"))
    if fig.get("scope") is not None and fig["scope"] not in SCOPES:
        out.append(BrokenRule("figure-fields", label, f"scope must be one of {', '.join(SCOPES)}"))
    percentile = fig.get("percentile")
    if percentile is not None and (not is_number(percentile) or not 0 < percentile <= 100):
        out.append(BrokenRule("figure-fields", label, "percentile must be a number in (0, 100]"))
    if fig.get("status") is not None and fig["status"] not in STATUSES:
        out.append(BrokenRule("figure-fields", label, f"status must be one of {', '.join(STATUSES)}"))
    derived = fig.get("derived_from")
    if derived is not None and not (
        isinstance(derived, str) or (isinstance(derived, list) and all(isinstance(d, str) for d in derived))
    ):
        out.append(
            BrokenRule(
                "figure-fields",
                label,
                "derived_from must be a figure name, a sizing:/loadgen: field, or a list of them",
            )
        )
    size = fig.get("sample_size")
    if size is not None and (not isinstance(size, int) or isinstance(size, bool) or size < 1):
        out.append(BrokenRule("figure-fields", label, "sample_size must be an integer >= 1"))
    return out


def _is_rate(fig: dict[str, Any]) -> bool:
    return isinstance(fig.get("unit"), str) and bool(_RATE.search(fig["unit"]))


def _placeholder(fig: dict[str, Any]) -> bool:
    return fig.get("status") == "placeholder"


def _sources(fig: dict[str, Any]) -> list[str]:
    derived = fig.get("derived_from")
    return [derived] if isinstance(derived, str) else [d for d in derived or [] if isinstance(d, str)]


def _percentile_rules(fig: dict[str, Any], label: str) -> list[BrokenRule]:
    percentile, size = fig.get("percentile"), fig.get("sample_size")
    if percentile is None:
        return []
    if not isinstance(size, int) or isinstance(size, bool):
        return [BrokenRule("percentile-sample-size", label, f"p{percentile:g} without its sample size (n)")]
    # Nearest rank: rank = ceil(p/100 * n). For p99 that is the last sample whenever n < 100.
    if is_number(percentile) and percentile >= 99 and size >= 1 and math.ceil(percentile / 100 * size) == size:
        text = f"{fig.get('name', '')} {fig.get('unit', '')}".lower()
        if "max" not in text:
            return [
                BrokenRule(
                    "p99-is-max",
                    label,
                    f"p{percentile:g} of {size} samples is the maximum; say so in the name or unit ('max')",
                )
            ]
    return []


def _scope_rules(
    fig: dict[str, Any], label: str, aggregates: list[dict[str, Any]], sized: Sized | None = None
) -> list[BrokenRule]:
    out = []
    if _is_rate(fig) and fig.get("scope") not in ("aggregate", "per_user"):
        out.append(BrokenRule("speed-scope", label, "a speed needs scope 'aggregate' or 'per_user'"))
    if fig.get("scope") == "per_user":
        # By its scope field and its value, never by a word of its name or unit ("per-user throughput" is a fair
        # name). The replica's throughput at more than one stream is no user's speed, whatever the figure says it
        # is derived from: a user sees the throughput divided by the streams. At one stream a user's speed is the
        # aggregate's, and both figures may rightly have one value.
        if sized is not None and sized.shared(fig.get("value")):
            assert sized.streams is not None
            out.append(
                BrokenRule(
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
                    BrokenRule(
                        "per-user-not-aggregate",
                        label,
                        f"aggregate figure '{agg.get('name')}' restated as a per-user speed",
                    )
                )
                break
    return out


def _sizing_rules(figures: list[dict[str, Any]], body: str, sizing_inputs: Any = None) -> list[BrokenRule]:
    out = []
    sizing = [f for f in figures if _SIZES_PRODUCTION.search(str(f.get("name", "")))]
    used = sizing_inputs.get("throughput") if isinstance(sizing_inputs, dict) else None
    for fig in figures:
        # By meaning: the throughput the memo's sizing was run with, whatever the figure is called.
        if (
            used is not None
            and fig.get("value") == used
            and is_token_rate(fig)
            and fig.get("provenance") in LOCAL
            and not _placeholder(fig)
            and fig not in sizing
        ):
            out.append(
                BrokenRule(
                    "production-provenance",
                    str(fig.get("name")),
                    f"the sizing's --throughput {used:g} is this figure, {fig['provenance']!r}; a laptop or "
                    "fake-server run sizes nothing in production unless labelled status: placeholder",
                )
            )
    for fig in sizing:
        if fig.get("provenance") in LOCAL and not _placeholder(fig):
            out.append(
                BrokenRule(
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
            BrokenRule(
                "production-provenance",
                None,
                "every aggregate throughput comes from a laptop or the fake server, so any replica count rests on one",
            )
        )
    if any(f.get("provenance") != "target GPU" for f in sizing) and "placeholder" not in body.lower():
        out.append(
            BrokenRule(
                "placeholder-stated",
                None,
                "sizing rests on figures not measured on the target GPU; the memo should call it a placeholder",
                "advice",
            )
        )
    return out


def check_figures(front: dict[str, Any], body: str = "", *, first_line: int = 1) -> list[BrokenRule]:
    """Every rule on parsed front matter (and the body, for the advice that reads it)."""
    out = []
    if version_of(front.get("contract")) is None:
        *rest, last = [str(v) for v in supported()]
        versions = f"{', '.join(rest)} or {last}" if rest else last
        out.append(BrokenRule("front-matter", None, f"contract must be {versions}, got {front.get('contract')!r}"))
    figures = front.get("figures")
    if not isinstance(figures, list) or not figures:
        return out + [BrokenRule("front-matter", None, "figures must be a non-empty list")]
    unknown = set(front) - _TOP
    if unknown:
        out.append(BrokenRule("front-matter", None, f"unknown keys: {', '.join(sorted(map(str, unknown)))}"))
    good = [f for f in figures if isinstance(f, dict)]
    if len(good) < len(figures):
        out.append(BrokenRule("figure-fields", None, "every figure must be a mapping"))
    aggregates = [f for f in good if f.get("scope") == "aggregate"]
    sized = sized_by(front.get("sizing_inputs"))
    seen: set[str] = set()
    for index, fig in enumerate(good):
        label = str(fig.get("name") or f"figures[{index}]")
        if label in seen:
            out.append(BrokenRule("figure-fields", label, "name used twice"))
        seen.add(label)
        out += _fields(fig, label) + _percentile_rules(fig, label) + _scope_rules(fig, label, aggregates, sized)
    return (
        out
        + _sizing_rules(good, body, front.get("sizing_inputs"))
        + text_rules(good, body, first_line, front.get("sizing_inputs"))
    )


def locate(findings: list[BrokenRule], text: str) -> list[BrokenRule]:
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
                f = BrokenRule(f.rule, f.figure, f.message, f.severity, hit + 1, lines[hit].strip())
        out.append(f)
    return out


def check_memo(text: str) -> list[BrokenRule]:
    """Every rule on a whole memo; a missing or unreadable front matter is one 'front-matter' finding."""
    try:
        front, body, first_line = split_front_matter(text)
    except MemoError as exc:
        return [BrokenRule("front-matter", None, str(exc))]
    findings = check_figures(front, body, first_line=first_line)
    return locate(findings, text)


def errors(findings: list[BrokenRule]) -> list[BrokenRule]:
    """The findings the contract scores (advice left out)."""
    return [f for f in findings if f.severity == "error"]
