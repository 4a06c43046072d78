"""The domains the unseen variants draw from, as the brief publishes them (grader/rubric/domains.yaml).

    dims = load_domains()
    outside(dims, variants_data)   # every draw of the variants file that leaves its domain, or has none

A draw that leaves its published domain would grade a candidate on something the brief never allowed for;
a draw no dimension covers moves a constant the brief never says may move. The kit's tests hold the
variants file to both.
"""

from __future__ import annotations

import fnmatch
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from grader.shared.yaml_files import read_yaml

__all__ = ["DOMAINS_FILE", "Dimension", "draws_of", "load_domains", "outside", "outside_drawn"]

DOMAINS_FILE = Path(__file__).resolve().parent / "domains.yaml"


@dataclass(frozen=True)
class Dimension:
    name: str
    paths: tuple[str, ...]
    text: str
    low: float | None = None  # `range: [low, high]`
    high: float | None = None
    values: tuple[Any, ...] | None = None  # `values: [...]`; None with no range: any value

    def covers(self, path: str) -> bool:
        return any(fnmatch.fnmatchcase(path, pattern) for pattern in self.paths)

    def admits(self, value: Any) -> bool:
        if self.low is not None and self.high is not None:
            return isinstance(value, int | float) and not isinstance(value, bool) and self.low <= value <= self.high
        return self.values is None or value in self.values


def load_domains(path: Path = DOMAINS_FILE) -> list[Dimension]:
    data = read_yaml(path)
    out = []
    for i, raw in enumerate(data["dimensions"]):
        where = f"{path}: dimensions[{i}]"
        if not isinstance(raw, dict) or not {"name", "paths", "text"} <= set(raw):
            raise ValueError(f"{where}: a dimension has a name, paths and text")
        low, high = raw.get("range") or (None, None)
        values = raw.get("values")
        out.append(
            Dimension(
                str(raw["name"]),
                tuple(raw["paths"]),
                " ".join(str(raw["text"]).split()),
                low,
                high,
                None if values in (None, "any") else tuple(values),
            )
        )
    return out


def draws_of(variants: dict[str, Any]) -> Iterator[tuple[str, str, Any]]:
    """Every draw of a variants file as (where it is, its setting's dotted path, its draw)."""
    for scenario, draws in (variants.get("loadgen") or {}).items():
        for path, draw in draws.items():
            yield f"loadgen.{scenario}", path, draw
    gateway = variants.get("gateway") or {}
    for block in ("config", "servers"):
        for path, draw in (gateway.get(block) or {}).items():
            yield f"gateway.{block}", path, draw
    for case, draws in (gateway.get("cases") or {}).items():
        for path, draw in (draws or {}).items():
            yield f"gateway.cases.{case}", path, draw
    for i, extra in enumerate(gateway.get("extra_cases") or ()):
        for path, draw in (extra.get("draw") or {}).items():
            yield f"gateway.extra_cases[{i}]", path, draw


def _values(draw: Any) -> list[Any]:
    """The values a draw can take that bound it: both ends of a range, or each of its choices. A draw read against
    the value it replaces (scale, shift, follow) has none here: `outside_drawn` checks the values it drew."""
    if isinstance(draw, list):
        return list(draw)
    if isinstance(draw, dict) and "one_of" in draw:
        return list(draw["one_of"])
    if isinstance(draw, dict) and "range" in draw:
        return list(draw["range"])
    return []


def outside(dimensions: list[Dimension], variants: dict[str, Any]) -> list[str]:
    """Each draw that no dimension covers, or that can leave its dimension's domain, said in one line."""
    problems = []
    for where, path, draw in draws_of(variants):
        dimension = next((d for d in dimensions if d.covers(path)), None)
        if dimension is None:
            problems.append(f"{where}.{path}: no published dimension covers this draw (grader/rubric/domains.yaml)")
            continue
        if bad := [v for v in _values(draw) if not dimension.admits(v)]:
            problems.append(f"{where}.{path}: {bad[0]!r} is outside the published domain of {dimension.name}")
    return problems


def outside_drawn(dimensions: list[Dimension], drawn: Iterable[tuple[str, str, Any]]) -> list[str]:
    """Each value actually drawn, as (where, dotted path, value), that leaves its dimension's domain: the check of
    a draw read against its published value, made on the draws of many seeds."""
    problems: dict[str, str] = {}
    for where, path, value in drawn:
        dimension = next((d for d in dimensions if d.covers(path)), None)
        if dimension is not None and not dimension.admits(value) and f"{where}.{path}" not in problems:
            problems[f"{where}.{path}"] = (
                f"{where}.{path}: {value!r} was drawn, outside the published domain of {dimension.name}"
            )
    return list(problems.values())
