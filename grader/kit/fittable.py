"""The constants a fitted solution could hard-code to pass a public check, each with the unseen draw that
moves it (grader/kit/fittable.yaml): the traceability chain's last link.

A constant with no draw and no reason it cannot be fitted, a drawn constant with no chaff fitted to it and
no reason none is written, a draw the unseen material does not make, an anchor the brief does not have, and
a chaff fitted to the constant that is not graded on the draws are problems; tests/kit/test_traceability.py
fails on them, and docs/grading.md shows the table (`python -m grader.kit.traceability --write`).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from grader.kit.chaff import Chaff
from grader.rubric.domains import draws_of
from grader.rubric.sizing_plan import HIDDEN_SETS
from grader.rubric.variants import VARIANTS_FILE
from grader.shared.yaml_files import read_yaml

__all__ = [
    "FITTABLE",
    "FIT_END",
    "FIT_START",
    "Fittable",
    "fittable",
    "fittable_problems",
    "render_fittable",
    "unseen_draws",
]

FIT_START, FIT_END = "<!-- fittable: start -->", "<!-- fittable: end -->"
FITTABLE = Path(__file__).resolve().parent / "fittable.yaml"


@dataclass(frozen=True)
class Fittable:
    constant: str
    anchors: tuple[str, ...]
    draws: tuple[str, ...]
    cannot_fit: str
    chaff: tuple[str, ...]
    no_chaff: str = ""  # why no chaff is fitted to a drawn constant: the published runs already move it


def fittable(path: Path = FITTABLE) -> list[Fittable]:
    return [
        Fittable(
            str(raw["constant"]),
            tuple(raw.get("anchors") or ()),
            tuple(raw.get("draws") or ()),
            str(raw.get("cannot_fit") or ""),
            tuple(raw.get("chaff") or ()),
            str(raw.get("no_chaff") or ""),
        )
        for raw in read_yaml(path)["constants"]
    ]


def unseen_draws(variants: Path = VARIANTS_FILE, sizing: Path = HIDDEN_SETS) -> set[str]:
    """Every draw the unseen material makes, named as fittable.yaml names them."""
    drawn = read_yaml(variants)
    out = {f"{where}.{path}" for where, path, _ in draws_of(drawn)}
    out |= {f"tests.{key}" for key, value in (drawn.get("tests") or {}).items() if value}
    data = read_yaml(sizing)
    out |= {f"sizing.sets.{name}" for name in data.get("sets") or {}}
    return out | ({"sizing.refuse"} if data.get("refuse") else set())


def fittable_problems(
    constants: list[Fittable], chaff: list[Chaff], draws: set[str], anchors: set[str], brief: str = "TASK.md"
) -> list[str]:
    """A constant with no draw and no reason, a drawn one with no chaff and no reason, a draw the unseen material
    does not make, an anchor the brief does not have, a chaff that does not exist or is not graded on the unseen
    variants."""
    by_name = {c.name: c for c in chaff}
    out = []
    for f in constants:
        if not f.draws and not f.cannot_fit:
            out.append(f"{f.constant}: no unseen draw moves it, and no reason says it cannot be fitted")
        if f.draws and not f.chaff and not f.no_chaff:
            out.append(f"{f.constant}: no chaff is fitted to it, and no reason says why none is")
        out += [f"{f.constant}: draw {d!r}: the unseen material makes no such draw" for d in f.draws if d not in draws]
        out += [f"{f.constant}: anchor {a!r} is no statement of {brief}" for a in f.anchors if a not in anchors]
        for name in f.chaff:
            if name not in by_name:
                out.append(f"{f.constant}: chaff {name!r} does not exist")
            elif not by_name[name].unseen:
                out.append(f"{f.constant}: chaff {name!r} is fitted to it, so must say `unseen: true`")
    return out


def render_fittable(constants: list[Fittable]) -> str:
    """The fittable constants' table docs/grading.md shows, between its markers."""
    lines = [
        FIT_START,
        "",
        "| constant a fitted solution could hard-code | statements | what moves it, unseen | chaff fitted to it |",
        "| --- | --- | --- | --- |",
    ]
    for f in constants:
        moves = ", ".join(f"`{d}`" for d in f.draws) or f"cannot be fitted: {f.cannot_fit}"
        anchors = ", ".join(f"`{a}`" for a in f.anchors)
        fitted = ", ".join(f"`{c}`" for c in f.chaff) or (f"none: {f.no_chaff}" if f.no_chaff else "")
        lines.append(f"| {f.constant} | {anchors} | {moves} | {fitted} |")
    return "\n".join([*lines, "", FIT_END])
