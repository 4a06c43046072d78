"""Every graded statement of the candidate's brief, the criteria that check it and the chaff that proves it;
and the constants a fitted solution could hard-code to pass it, each with the unseen draw that moves it.

starter/TASK.md marks each graded statement with an anchor (`<a id="def-ttft"></a>` before it): each
definition, each rule of each deliverable, each rule of the files the contract asks for. Each rubric
criterion names the anchors it checks (`anchors:`), and each question of the interview's bank the one it
probes (grader/unseen/questions.yaml). A statement no criterion checks, a criterion that names an anchor
the brief does not have, a criterion no chaff loses, and a statement with fewer than two interview
questions are all problems: the test suite fails on them (tests/kit/test_traceability.py), and
docs/grading.md shows the table (the questions only counted: the bank itself never ships). The fittable
constants extend the chain (grader/kit/fittable.py), and docs/grading.md shows their table too.

    python -m grader.kit.traceability            # the problems, or the table when there are none
    python -m grader.kit.traceability --write    # rewrite the table in docs/grading.md
"""

from __future__ import annotations

import re
import sys
from dataclasses import dataclass
from pathlib import Path

from grader.kit.chaff import Chaff, list_chaff
from grader.kit.fittable import FIT_END, FIT_START, FITTABLE, fittable, fittable_problems, render_fittable, unseen_draws
from grader.rubric import Rubric, load_rubric
from grader.rubric.questions import QuestionBank, load_questions
from grader.shared.yaml_files import YamlError

__all__ = ["QUESTIONS_PER_STATEMENT", "Statement", "docs_table", "problems", "render", "rows", "statements"]

ROOT = Path(__file__).resolve().parents[2]
TASK = ROOT / "starter" / "TASK.md"
DOCS = ROOT / "docs" / "grading.md"
START, END = "<!-- traceability: start -->", "<!-- traceability: end -->"
_ANCHOR = re.compile(r'<a id="([a-z0-9-]+)"></a>')
_MARKUP = re.compile(r"\*\*|`|<[^>]+>")
QUESTIONS_PER_STATEMENT = 2  # the interview asks about every graded statement in more than one way


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
class TraceRow:
    statement: Statement
    criteria: tuple[str, ...]
    chaff: tuple[str, ...]  # chaff that lose one of those criteria, by name
    questions: int = 0  # the interview's questions that probe it


def _losers(chaff: list[Chaff]) -> dict[str, list[str]]:
    """Criterion id -> the chaff that target it (the untouched starter, which loses everything, is not one)."""
    out: dict[str, list[str]] = {}
    for c in chaff:
        for target in c.targets:
            out.setdefault(target, []).append(c.name)
    return out


def rows(rubric: Rubric, chaff: list[Chaff], task: Path = TASK, bank: QuestionBank | None = None) -> list[TraceRow]:
    losers = _losers(chaff)
    asked = bank.by_anchor() if bank is not None else {}
    out = []
    for statement in statements(task):
        criteria = tuple(c.id for c in rubric.criteria if statement.anchor in c.anchors)
        names = tuple(dict.fromkeys(n for c in criteria for n in losers.get(c, [])))
        out.append(TraceRow(statement, criteria, names, len(asked.get(statement.anchor, []))))
    return out


def problems(rubric: Rubric, chaff: list[Chaff], task: Path = TASK, bank: QuestionBank | None = None) -> list[str]:
    """What breaks the chain from a graded statement to its criteria to a chaff that loses them."""
    found = statements(task)
    known = {s.anchor for s in found}
    out = [
        f"{task.name}:{s.line}: anchor {s.anchor!r} appears twice"
        for i, s in enumerate(found)
        if s.anchor in {t.anchor for t in found[:i]}
    ]
    losers = _losers(chaff)
    for row in rows(rubric, chaff, task, bank):
        if not row.criteria:
            out.append(f"{task.name}:{row.statement.line}: {row.statement.anchor}: no criterion checks this statement")
        if bank is not None and row.questions < QUESTIONS_PER_STATEMENT:
            out.append(
                f"{task.name}:{row.statement.line}: {row.statement.anchor}: {row.questions} interview question(s) "
                f"probe this statement; {QUESTIONS_PER_STATEMENT} at least ({bank.path.name})"
            )
    for c in rubric.criteria:
        out += [f"{c.id}: anchors: {a!r} is no statement of {task.name}" for a in c.anchors if a not in known]
        if not c.anchors:
            out.append(f"{c.id}: anchors: the criterion names no statement of {task.name} it checks")
        if c.id not in losers:
            out.append(f"{c.id}: no chaff loses this criterion (submissions/chaff/*/chaff.yaml targets)")
    return out


def render(table: list[TraceRow]) -> str:
    """The table docs/grading.md shows, between its markers."""
    lines = [
        START,
        "",
        "| statement (starter/TASK.md) | criteria | chaff that lose them | interview questions |",
        "| --- | --- | --- | ---: |",
    ]
    for row in table:
        criteria = ", ".join(f"`{c}`" for c in row.criteria)
        chaff = ", ".join(f"`{n}`" for n in row.chaff)
        lines.append(f"| `{row.statement.anchor}`: {row.statement.text} | {criteria} | {chaff} | {row.questions} |")
    return "\n".join([*lines, "", END])


def docs_table(docs: Path = DOCS, start: str = START, end: str = END) -> str:
    """A table as docs/grading.md has it now, between its markers ("" when it has none)."""
    text = docs.read_text(encoding="utf-8")
    if start not in text or end not in text:
        return ""
    return text[text.index(start) : text.index(end) + len(end)]


def main(argv: list[str]) -> int:
    rubric, chaff = load_rubric(), list_chaff(ROOT / "submissions" / "chaff")
    bank = load_questions(rubric)
    try:
        constants = fittable()
    except (YamlError, KeyError, TypeError) as exc:
        print(f"{FITTABLE}: {exc}", file=sys.stderr)
        return 2
    found = problems(rubric, chaff, bank=bank) + fittable_problems(
        constants, chaff, unseen_draws(), {s.anchor for s in statements()}
    )
    for line in found:
        print(line, file=sys.stderr)
    tables = {(START, END): render(rows(rubric, chaff, bank=bank)), (FIT_START, FIT_END): render_fittable(constants)}
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
