"""Machine checks of a sizing memo's front matter: the honesty rules of contract 1.

A memo (Markdown) opens with YAML front matter listing every figure it quotes, each with a value,
a unit, a provenance and, for speeds, a scope. These checks catch the dishonest numbers the seed
names: a percentile without its sample size, a p99 from fewer than 100 requests not called the
maximum, aggregate throughput passed off as one user's speed, production sized on a laptop or
fake-server run. They read labels, not prose; a person still reads the memo.

Each finding has a `severity`: "error" for the contract's rules (the grader scores them) and
"advice" for checks the contract does not state (reported, never scored).
"""

from __future__ import annotations

import math
import re
from dataclasses import asdict, dataclass
from typing import Any

import yaml

__all__ = ["PROVENANCES", "SCOPES", "Finding", "MemoError", "check_figures", "check_memo", "errors",
           "split_front_matter"]

PROVENANCES = ("measured on fake server", "laptop", "target GPU", "invented sample", "assumption")
SCOPES = ("aggregate", "per_user", "n/a")
#: Provenances that describe this machine, not the production GPU.
LOCAL = ("measured on fake server", "laptop")
#: Provenances a production sizing may rest on, the last two only as a stated placeholder.
SIZING_OK = ("target GPU", "invented sample", "assumption")

_FIELDS = frozenset({"name", "value", "unit", "provenance", "scope", "sample_size", "percentile"})
_NAME = re.compile(r"^[a-z][a-z0-9_]*$")
_RATE = re.compile(r"(/\s*s\b|/\s*sec|per\s+second|tok/s|tokens/s)", re.IGNORECASE)
_THROUGHPUT = re.compile(r"throughput|aggregate", re.IGNORECASE)
_SIZES_PRODUCTION = re.compile(r"replica|production|sizing", re.IGNORECASE)
_FRONT = re.compile(r"\A---[ \t]*\r?\n(.*?)\r?\n---[ \t]*(?:\r?\n|\Z)", re.DOTALL)


class MemoError(ValueError):
    """The memo has no front matter, or it is not a YAML mapping."""


@dataclass(frozen=True)
class Finding:
    """One broken rule: which, on which figure (None for the memo as a whole), and why."""

    rule: str
    figure: str | None
    message: str
    severity: str = "error"

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def split_front_matter(text: str) -> tuple[dict[str, Any], str]:
    """The parsed front matter and the Markdown body after it."""
    match = _FRONT.match(text.lstrip("\ufeff"))
    if not match:
        raise MemoError("no front matter: the memo must open with a line '---', YAML, and a closing '---'")
    try:
        data = yaml.safe_load(match.group(1))
    except yaml.YAMLError as exc:
        raise MemoError(f"front matter is not YAML: {exc}") from None
    if not isinstance(data, dict):
        raise MemoError("front matter must be a YAML mapping with `contract` and `figures`")
    return data, text[match.end():]


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
    if not _number(fig.get("value")):
        out.append(Finding("figure-fields", label, "value must be a finite number"))
    if not isinstance(fig.get("unit"), str) or not fig["unit"].strip():
        out.append(Finding("figure-fields", label, "unit must be a non-empty string"))
    if fig.get("provenance") not in PROVENANCES:
        out.append(Finding("figure-fields", label, f"provenance must be one of {', '.join(PROVENANCES)}"))
    if fig.get("scope") is not None and fig["scope"] not in SCOPES:
        out.append(Finding("figure-fields", label, f"scope must be one of {', '.join(SCOPES)}"))
    percentile = fig.get("percentile")
    if percentile is not None and (not _number(percentile) or not 0 < percentile <= 100):
        out.append(Finding("figure-fields", label, "percentile must be a number in (0, 100]"))
    size = fig.get("sample_size")
    if size is not None and (not isinstance(size, int) or isinstance(size, bool) or size < 1):
        out.append(Finding("figure-fields", label, "sample_size must be an integer >= 1"))
    return out


def _is_rate(fig: dict[str, Any]) -> bool:
    return isinstance(fig.get("unit"), str) and bool(_RATE.search(fig["unit"]))


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
            return [Finding("p99-is-max", label, f"p{percentile:g} of {size} samples is the maximum; "
                                                 "say so in the name or unit ('max')")]
    return []


def _scope_rules(fig: dict[str, Any], label: str, aggregates: list[dict[str, Any]]) -> list[Finding]:
    out = []
    if _is_rate(fig) and fig.get("scope") not in ("aggregate", "per_user"):
        out.append(Finding("speed-scope", label, "a speed needs scope 'aggregate' or 'per_user'"))
    if fig.get("scope") == "per_user":
        if _THROUGHPUT.search(f"{fig.get('name', '')} {fig.get('unit', '')}"):
            out.append(Finding("per-user-not-aggregate", label,
                               "a per-user speed named or measured as (aggregate) throughput"))
        for agg in aggregates:
            if agg.get("value") == fig.get("value") and agg.get("unit") == fig.get("unit"):
                out.append(Finding("per-user-not-aggregate", label,
                                   f"the same value as aggregate figure '{agg.get('name')}' presented per user"))
    return out


def _sizing_rules(figures: list[dict[str, Any]], body: str) -> list[Finding]:
    out = []
    sizing = [f for f in figures if _SIZES_PRODUCTION.search(str(f.get("name", "")))]
    for fig in sizing:
        if fig.get("provenance") in LOCAL:
            out.append(Finding("production-provenance", str(fig.get("name")),
                               f"production sizing rests on a figure {fig['provenance']!r}; "
                               "laptop and fake-server runs test the client, not the GPU"))
    throughputs = [f for f in figures if _is_rate(f) and f.get("scope") == "aggregate"]
    if throughputs and not any(f.get("provenance") in SIZING_OK for f in throughputs):
        out.append(Finding("production-provenance", None,
                           "every aggregate throughput comes from a laptop or the fake server, "
                           "so any replica count rests on one"))
    if any(f.get("provenance") != "target GPU" for f in sizing) and "placeholder" not in body.lower():
        out.append(Finding("placeholder-stated", None, "sizing rests on figures not measured on the target GPU; "
                                                       "the memo should call it a placeholder", "advice"))
    return out


def check_figures(front: dict[str, Any], body: str = "") -> list[Finding]:
    """Every rule on parsed front matter (and the body, for the advice that reads it)."""
    out = []
    if front.get("contract") != 1:
        out.append(Finding("front-matter", None, f"contract must be 1, got {front.get('contract')!r}"))
    figures = front.get("figures")
    if not isinstance(figures, list) or not figures:
        return out + [Finding("front-matter", None, "figures must be a non-empty list")]
    unknown = set(front) - {"contract", "figures"}
    if unknown:
        out.append(Finding("front-matter", None, f"unknown keys: {', '.join(sorted(map(str, unknown)))}"))
    good = [f for f in figures if isinstance(f, dict)]
    if len(good) < len(figures):
        out.append(Finding("figure-fields", None, "every figure must be a mapping"))
    aggregates = [f for f in good if f.get("scope") == "aggregate"]
    seen: set[str] = set()
    for index, fig in enumerate(good):
        label = str(fig.get("name") or f"figures[{index}]")
        if label in seen:
            out.append(Finding("figure-fields", label, "name used twice"))
        seen.add(label)
        out += _fields(fig, label) + _percentile_rules(fig, label) + _scope_rules(fig, label, aggregates)
    return out + _sizing_rules(good, body)


def check_memo(text: str) -> list[Finding]:
    """Every rule on a whole memo; a missing or unreadable front matter is one 'front-matter' finding."""
    try:
        front, body = split_front_matter(text)
    except MemoError as exc:
        return [Finding("front-matter", None, str(exc))]
    return check_figures(front, body)


def errors(findings: list[Finding]) -> list[Finding]:
    """The findings the contract scores (advice left out)."""
    return [f for f in findings if f.severity == "error"]
