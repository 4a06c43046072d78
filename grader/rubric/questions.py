"""The interview's question bank, read from grader/unseen/questions.yaml: what `grader interview` asks.

A question is keyed by the criterion whose outcome selects it and by the outcomes it fits (failed,
borderline, passed); it probes one graded statement of the brief (an anchor of starter/TASK.md, one of the
criterion's own), cites one figure of the candidate's own runs (`figure`, computed from the run records by
grader/interview/figures.py, its fields named `{like_this}` in the question), and says what a good answer
covers. The bank is data, checked against schemas/grader/question-bank.schema.json and against the rubric
and the figures it names; every problem is one line naming the file and the field.

Unseen material like the variants: it ships with the grader, never with the candidate's bundle (a
candidate who read the questions would rehearse the answers). Without the file there is no bank.
"""

from __future__ import annotations

import string
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from grader.rubric.load import Rubric
from grader.shared.kit_files import schemas_dir
from grader.shared.schema_words import schema_problems
from grader.shared.yaml_files import YamlError, read_yaml

__all__ = ["OUTCOMES", "QUESTIONS_FILE", "Question", "QuestionBank", "QuestionBankError", "load_questions"]

QUESTIONS_FILE = Path(__file__).resolve().parents[1] / "unseen" / "questions.yaml"
OUTCOMES = ("failed", "borderline", "passed")


class QuestionBankError(ValueError):
    """The bank cannot be used; the message names the file and the field, one problem a line."""


@dataclass(frozen=True)
class Question:
    id: str
    criterion: str
    anchor: str
    outcomes: tuple[str, ...]
    figure: str
    ask: str  # the question, with the figure's {fields}
    good_answer: str

    @property
    def fields(self) -> tuple[str, ...]:
        """The figure fields the question names, in order."""
        return tuple(name for _, name, _, _ in string.Formatter().parse(self.ask) if name)

    def text(self, values: Mapping[str, str]) -> str:
        """The question with the candidate's own figures in it."""
        return self.ask.format_map(dict(values))


@dataclass(frozen=True)
class QuestionBank:
    path: Path
    questions: tuple[Question, ...]

    def matching(self, criterion: str, outcome: str) -> list[Question]:
        return [q for q in self.questions if q.criterion == criterion and outcome in q.outcomes]

    def by_anchor(self) -> dict[str, list[Question]]:
        out: dict[str, list[Question]] = {}
        for q in self.questions:
            out.setdefault(q.anchor, []).append(q)
        return out


def load_questions(
    rubric: Rubric, *, figures: Mapping[str, Sequence[str]] | None = None, path: Path = QUESTIONS_FILE
) -> QuestionBank | None:
    """The bank at `path`, held to `rubric` (each question's criterion and anchor) and, when given, to
    `figures` (figure name -> the fields it gives); None when there is no bank (a candidate's kit)."""
    if not path.is_file():
        return None
    try:
        data = read_yaml(path)
    except YamlError as exc:
        raise QuestionBankError(str(exc)) from None
    problems = schema_problems(schemas_dir() / "grader" / "question-bank.schema.json", data)
    if problems:
        raise QuestionBankError("\n".join(f"{path}: {p}" for p in problems))
    criteria = {c.id: c for c in rubric.criteria}
    questions: list[Question] = []
    for i, raw in enumerate(data["questions"]):
        question = _question(raw)
        where = f"{path}: questions[{i}] ({question.id})"
        problems += _problems(where, question, criteria, figures)
        if any(q.id == question.id for q in questions):
            problems.append(f"{where}.id: appears twice")
        questions.append(question)
    if problems:
        raise QuestionBankError("\n".join(problems))
    return QuestionBank(path, tuple(questions))


def _question(raw: dict[str, Any]) -> Question:
    return Question(
        raw["id"],
        raw["criterion"],
        raw["anchor"],
        tuple(raw["outcomes"]),
        raw["figure"],
        " ".join(raw["ask"].split()),
        " ".join(raw["good_answer"].split()),
    )


def _problems(
    where: str, question: Question, criteria: Mapping[str, Any], figures: Mapping[str, Sequence[str]] | None
) -> list[str]:
    out = []
    criterion = criteria.get(question.criterion)
    if criterion is None:
        out.append(f"{where}.criterion: {question.criterion!r} is not a criterion of the rubric")
    elif question.anchor not in criterion.anchors:
        out.append(
            f"{where}.anchor: {question.anchor!r} is not one of {question.criterion}'s anchors "
            f"({', '.join(criterion.anchors)})"
        )
    try:
        fields = question.fields
    except ValueError as exc:
        return [*out, f"{where}.ask: not a template ({exc})"]
    if figures is not None:
        if question.figure not in figures:
            out.append(f"{where}.figure: {question.figure!r} is no figure (known: {', '.join(sorted(figures))})")
        elif unknown := [f for f in fields if f not in figures[question.figure]]:
            out.append(
                f"{where}.ask: {{{unknown[0]}}} is not a field of figure {question.figure} "
                f"({', '.join(figures[question.figure])})"
            )
    return out
