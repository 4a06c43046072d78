"""Every graded statement of the candidate's brief, the criteria that check it and the chaff that proves it;
and the constants a fitted solution could hard-code to pass it, each with the unseen draw that moves it.

starter/TASK.md marks each graded statement with an anchor (`<a id="def-ttft"></a>` before it): each
definition, each rule of each deliverable, each rule of the files the contract asks for. Each rubric
criterion names the anchors it checks (`anchors:`). A statement no criterion checks, a criterion that
names an anchor the brief does not have, and a criterion no chaff loses are all problems: the test
suite fails on them (tests/test_traceability.py), and docs/grading.md shows the table. The fittable
constants (grader/kit/fittable.yaml) extend the chain: a constant with no draw and no reason it cannot be
fitted, a draw the unseen material does not make, and a chaff that is not graded on the draws are problems
too, and docs/grading.md shows their table.

    python -m grader.kit.traceability            # the problems, or the table when there are none
    python -m grader.kit.traceability --write    # rewrite the table in docs/grading.md
"""

from __future__ import annotations

import re
import sys
from dataclasses import dataclass
from pathlib import Path

from grader.kit.chaff import Chaff, list_chaff
from grader.rubric import Rubric, load_rubric
from grader.rubric.domains import draws_of
from grader.rubric.sizing_plan import HIDDEN_SETS
from grader.rubric.variants import VARIANTS_FILE
from grader.shared.yaml_files import YamlError, read_yaml

__all__ = [
    "Fittable",
    "Statement",
    "fittable",
    "fittable_problems",
    "problems",
    "render",
    "render_fittable",
    "rows",
    "statements",
    "unseen_draws",
]

ROOT = Path(__file__).resolve().parents[2]
TASK = ROOT / "starter" / "TASK.md"
DOCS = ROOT / "docs" / "grading.md"
START, END = "<!-- traceability: start -->", "<!-- traceability: end -->"
FIT_START, FIT_END = "<!-- fittable: start -->", "<!-- fittable: end -->"
FITTABLE = Path(__file__).resolve().parent / "fittable.yaml"
_ANCHOR = re.compile(r'<a id="([a-z0-9-]+)"></a>')
_MARKUP = re.compile(r"\*\*|`|<[^>]+>")


@dataclass(frozen=True)
class Statement:
    anchor: str
    line: int
    text: str  # the statement's first words, for the table


def statements(task: Path = TASK) -> list[Statement]:
    """The anchored statements of the brief, in order."""
    out = []
    for number, line in enumerate(task.read_text(encoding="utf-8").splitlines(), start=1):
        for match in _ANCHOR.finditer(line):
            words = _MARKUP.sub("", line[match.end() :]).strip(" -:")
            out.append(Statement(match.group(1), number, words[:90] + ("…" if len(words) > 90 else "")))
    return out


@dataclass(frozen=True)
class Row:
    statement: Statement
    criteria: tuple[str, ...]
    chaff: tuple[str, ...]  # chaff that lose one of those criteria, by name


def _losers(chaff: list[Chaff]) -> dict[str, list[str]]:
    """Criterion id -> the chaff that target it (the untouched starter, which loses everything, is not one)."""
    out: dict[str, list[str]] = {}
    for c in chaff:
        for target in c.targets:
            out.setdefault(target, []).append(c.name)
    return out


def rows(rubric: Rubric, chaff: list[Chaff], task: Path = TASK) -> list[Row]:
    losers = _losers(chaff)
    out = []
    for statement in statements(task):
        criteria = tuple(c.id for c in rubric.criteria if statement.anchor in c.anchors)
        names = tuple(dict.fromkeys(n for c in criteria for n in losers.get(c, [])))
        out.append(Row(statement, criteria, names))
    return out


def problems(rubric: Rubric, chaff: list[Chaff], task: Path = TASK) -> list[str]:
    """What breaks the chain from a graded statement to its criteria to a chaff that loses them."""
    found = statements(task)
    known = {s.anchor for s in found}
    out = [
        f"{task.name}:{s.line}: anchor {s.anchor!r} appears twice"
        for i, s in enumerate(found)
        if s.anchor in {t.anchor for t in found[:i]}
    ]
    losers = _losers(chaff)
    for row in rows(rubric, chaff, task):
        if not row.criteria:
            out.append(f"{task.name}:{row.statement.line}: {row.statement.anchor}: no criterion checks this statement")
    for c in rubric.criteria:
        out += [f"{c.id}: anchors: {a!r} is no statement of {task.name}" for a in c.anchors if a not in known]
        if not c.anchors:
            out.append(f"{c.id}: anchors: the criterion names no statement of {task.name} it checks")
        if c.id not in losers:
            out.append(f"{c.id}: no chaff loses this criterion (submissions/chaff/*/chaff.yaml targets)")
    return out


@dataclass(frozen=True)
class Fittable:
    constant: str
    anchors: tuple[str, ...]
    draws: tuple[str, ...]
    cannot_fit: str
    chaff: tuple[str, ...]


def fittable(path: Path = FITTABLE) -> list[Fittable]:
    return [
        Fittable(
            str(raw["constant"]),
            tuple(raw.get("anchors") or ()),
            tuple(raw.get("draws") or ()),
            str(raw.get("cannot_fit") or ""),
            tuple(raw.get("chaff") or ()),
        )
        for raw in read_yaml(path)["constants"]
    ]


def unseen_draws(variants: Path = VARIANTS_FILE, sizing: Path = HIDDEN_SETS) -> set[str]:
    """Every draw the unseen material makes, named as fittable.yaml names them."""
    out = {f"{where}.{path}" for where, path, _ in draws_of(read_yaml(variants))}
    data = read_yaml(sizing)
    out |= {f"sizing.sets.{name}" for name in data.get("sets") or {}}
    return out | ({"sizing.refuse"} if data.get("refuse") else set())


def fittable_problems(constants: list[Fittable], chaff: list[Chaff], draws: set[str], task: Path = TASK) -> list[str]:
    """A constant with no draw and no reason, a draw the unseen material does not make, an anchor the brief does
    not have, a chaff that does not exist or is not graded on the unseen variants."""
    known = {s.anchor for s in statements(task)}
    by_name = {c.name: c for c in chaff}
    out = []
    for f in constants:
        if not f.draws and not f.cannot_fit:
            out.append(f"{f.constant}: no unseen draw moves it, and no reason says it cannot be fitted")
        out += [f"{f.constant}: draw {d!r}: the unseen material makes no such draw" for d in f.draws if d not in draws]
        out += [f"{f.constant}: anchor {a!r} is no statement of {task.name}" for a in f.anchors if a not in known]
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
        lines.append(f"| {f.constant} | {anchors} | {moves} | {', '.join(f'`{c}`' for c in f.chaff)} |")
    return "\n".join([*lines, "", FIT_END])


def render(table: list[Row]) -> str:
    """The table docs/grading.md shows, between its markers."""
    lines = [START, "", "| statement (starter/TASK.md) | criteria | chaff that lose them |", "| --- | --- | --- |"]
    for row in table:
        criteria = ", ".join(f"`{c}`" for c in row.criteria)
        chaff = ", ".join(f"`{n}`" for n in row.chaff)
        lines.append(f"| `{row.statement.anchor}`: {row.statement.text} | {criteria} | {chaff} |")
    return "\n".join([*lines, "", END])


def docs_table(docs: Path = DOCS, start: str = START, end: str = END) -> str:
    """A table as docs/grading.md has it now, between its markers ("" when it has none)."""
    text = docs.read_text(encoding="utf-8")
    if start not in text or end not in text:
        return ""
    return text[text.index(start) : text.index(end) + len(end)]


def main(argv: list[str]) -> int:
    rubric, chaff = load_rubric(), list_chaff(ROOT / "submissions" / "chaff")
    try:
        constants = fittable()
    except (YamlError, KeyError, TypeError) as exc:
        print(f"{FITTABLE}: {exc}", file=sys.stderr)
        return 2
    found = problems(rubric, chaff) + fittable_problems(constants, chaff, unseen_draws())
    for line in found:
        print(line, file=sys.stderr)
    tables = {(START, END): render(rows(rubric, chaff)), (FIT_START, FIT_END): render_fittable(constants)}
    if "--write" in argv:
        text = DOCS.read_text(encoding="utf-8")
        for (start, end), table in tables.items():
            current = docs_table(DOCS, start, end)
            if not current:
                print(f"{DOCS}: no {start} ... {end} markers to write the table between", file=sys.stderr)
                return 2
            text = text.replace(current, table)
        DOCS.write_text(text, encoding="utf-8")
    elif not found:
        print("\n\n".join(tables.values()))
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
