"""The memo's own measurements: its load generator's TTFT p50 and p90, each with its n, and its throughput, from
the results file it names (`loadgen_results`), labelled as what they are and quoted in its text.

A memo rests on what its own client measured: the client's TTFT from the first content delta (its p50 and p90,
each with the n behind it) and the throughput, the aggregate rate kept apart from any one request's speed.
Each is a figure of the front matter cited from the results file (`derived_from: loadgen:summary...`), with
the value the file holds at the precision the memo shows, labelled as a laptop or fake-server measurement, and
quoted in the text. A memo that quotes none of them, or names no results file, has nothing to judge.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from grader.criteria.memo_figures import is_number, is_token_rate
from grader.criteria.memo_rules import LOCAL
from grader.criteria.memo_text import SPEED_IN_TEXT, TIME_IN_TEXT, matches, sentences, time_scale

__all__ = ["MEASURED", "Measured", "Wanted", "judge_measured"]


@dataclass(frozen=True)
class Wanted:
    """One measurement the memo must quote: what it is, its field in the results file, and its percentile."""

    label: str
    field: str  # under the results file's summary: "ttft_s.p50"
    percentile: float | None = None

    @property
    def ref(self) -> str:
        return f"loadgen:summary.{self.field}"


MEASURED = (
    Wanted("TTFT p50", "ttft_s.p50", 50),
    Wanted("TTFT p90", "ttft_s.p90", 90),
    Wanted("throughput", "throughput_tokens_per_s"),
)


@dataclass
class Measured:
    """What the criterion found: the figure quoting each measurement, what is missing, and what is wrong."""

    missing: list[str] = field(default_factory=list)
    no_results: str = ""  # why there is no results file to measure against
    wrong: list[tuple[str, str]] = field(default_factory=list)  # (figure name, why)
    rows: list[list[Any]] = field(default_factory=list)  # measurement, figure, memo value, results value, ok


def _refs(fig: dict[str, Any]) -> list[str]:
    derived = fig.get("derived_from")
    return [derived] if isinstance(derived, str) else [d for d in derived or [] if isinstance(d, str)]


def _decimals(value: float) -> int:
    text = repr(float(value))
    return 0 if "e" in text or float(value).is_integer() else len(text.split(".")[1])


def _equal(fig: dict[str, Any], truth: float, scale: float) -> bool:
    """The figure is the measurement at the memo's rounding: within half its last decimal, or half a percent."""
    value = fig.get("value")
    if not isinstance(value, int | float) or not is_number(value) or (value == 0 and truth != 0):
        return False
    mine, shown = float(value), truth * scale
    return abs(mine - shown) <= 0.5 * 10 ** -_decimals(mine) + 1e-12 or abs(mine - shown) <= 0.005 * abs(shown)


def _quoted(fig: dict[str, Any], prose: list[tuple[int, str]], speed: bool) -> bool:
    """Whether the text quotes the figure's value: as a speed, or as a time in s or ms."""
    value = fig.get("value")
    if speed:
        return any(matches(m.group(1), value) for _, s in prose for m in SPEED_IN_TEXT.finditer(s))
    seconds = time_scale(str(fig.get("unit", ""))) or 1.0
    return any(
        matches(m.group(1), value, seconds * (1000.0 if m.group(2) == "ms" else 1.0))
        for _, s in prose
        for m in TIME_IN_TEXT.finditer(s)
    )


def _lookup(results: Any, path: str) -> Any:
    value = results.get("summary") if isinstance(results, dict) else None
    for part in path.split("."):
        value = value.get(part) if isinstance(value, dict) else None
    return value


def _problems(fig: dict[str, Any], wanted: Wanted, results: Any, prose: list[tuple[int, str]]) -> list[str]:
    """What is wrong with the figure that quotes `wanted`, against the results file and the text."""
    out = []
    truth = _lookup(results, wanted.field)
    speed = wanted.percentile is None
    scale = 1.0 if speed else 1.0 / (time_scale(str(fig.get("unit", ""))) or 1.0)
    if not is_number(truth):
        out.append(f"the results file has no {wanted.ref.removeprefix('loadgen:')} to compare it with")
    elif not _equal(fig, truth, scale):
        out.append(f"its value {fig.get('value')!r} is not the results file's {truth:.6g} at the precision shown")
    if fig.get("provenance") not in LOCAL:
        out.append(f"its provenance is {fig.get('provenance')!r}, not one of {', '.join(map(repr, LOCAL))}")
    if speed:
        if fig.get("scope") != "aggregate" or not is_token_rate(fig):
            out.append("the throughput is an aggregate speed: a tokens/s unit and scope: aggregate")
    else:
        n = _lookup(results, wanted.field.split(".")[0] + ".n")
        if fig.get("percentile") != wanted.percentile:
            out.append(f"it needs percentile: {wanted.percentile:g}")
        if fig.get("sample_size") != n:
            out.append(f"its sample_size is {fig.get('sample_size')!r}, but the results file's n is {n!r}")
        if time_scale(str(fig.get("unit", ""))) is None:
            out.append("its unit is not a time (s or ms)")
    if not _quoted(fig, prose, speed):
        out.append("the text never quotes its value")
    return out


def judge_measured(front: dict[str, Any], body: str, first_line: int, results: Any, problem: str) -> Measured:
    """The memo's own measurements against the results file it names (`results`: the parsed file, or None and
    `problem` saying why there is none)."""
    found = Measured()
    figures = [f for f in front.get("figures") or [] if isinstance(f, dict)]
    prose = sentences(body, first_line)
    quoting = {w: next((f for f in figures if w.ref in _refs(f)), None) for w in MEASURED}
    absent = [w for w, fig in quoting.items() if fig is None]
    found.missing = [f"{w.label} (a figure derived_from {w.ref})" for w in absent]
    if results is None:
        found.no_results = (
            f"no results file to measure against ({problem or 'the front matter names no loadgen_results'})"
        )
        return found
    for wanted, fig in quoting.items():
        if fig is None:
            continue
        problems = _problems(fig, wanted, results, prose)
        truth = _lookup(results, wanted.field)
        found.rows.append([wanted.label, fig.get("name"), fig.get("value"), truth, not problems])
        found.wrong += [(str(fig.get("name")), f"{wanted.label}: {why}") for why in problems]
    return found
