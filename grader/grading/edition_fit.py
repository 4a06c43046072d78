"""Which edition a submission's numbers fit: a solution carried from another cohort carries that cohort's numbers.

    from grader.grading.edition_fit import fitted_edition
    fit = fitted_edition(folder, issued="spring-2027", known=("default",))
    fit.sentence if fit else "fits its own edition"   # "fits edition default; was issued spring-2027 (...)"

The evidence is the memo scenario's numbers (grader/rubric/editions.py): the memo's `sizing_inputs` flag by flag,
and, in the memo's text and the submission's code, the numbers of an edition that are distinctive enough to
count (a GPU price, chats a day, tokens a turn, the KV cache's bytes a token, the weights, the API's prices),
written as they are or with thousands separators. An edition is named when at least `MIN_FIELDS` of its numbers
that the issued edition does not share are found, and more of them than of the issued edition's own. It is a
finding for a person, not a criterion: it costs no points.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from grader.outcome import edition_fit_sentence
from grader.rubric.editions import EditionError, edition_numbers

__all__ = ["MIN_FIELDS", "EditionFit", "fitted_edition"]

MIN_FIELDS = 3
#: The flags whose numbers count when found in text or code (the others are small or common numbers).
_DISTINCT = (
    "gpu-hour-usd",
    "chats-per-day",
    "input-tokens-per-turn",
    "output-tokens-per-turn",
    "kv-bytes-per-token",
    "weights-gb",
    "api-input-usd-per-million",
    "api-output-usd-per-million",
)
_CODE = (".py", ".yaml", ".yml", ".json", ".toml")
_SKIP = {".venv", "__pycache__", "node_modules", ".git", "check-report", "grade-report"}
_MOST_BYTES = 2_000_000
_NUMBER = re.compile(r"(?<![\w.])\d[\d,]*(?:\.\d+)?(?![\w])")


@dataclass(frozen=True)
class EditionFit:
    edition: str  # the edition the submission's numbers fit
    issued: str  # the edition it was graded against
    fields: tuple[str, ...]  # the flags whose numbers it carries

    @property
    def sentence(self) -> str:
        return edition_fit_sentence({"fits": self.to_dict()})

    def to_dict(self) -> dict[str, Any]:
        return {"edition": self.edition, "issued": self.issued, "fields": list(self.fields)}


def _values(value: Any) -> list[float]:
    items = value if isinstance(value, list | tuple) else [value]
    return [float(v) for v in items if isinstance(v, int | float) and not isinstance(v, bool)]


def _numbers_in(text: str) -> set[float]:
    out = set()
    for match in _NUMBER.finditer(text):
        token = match.group(0)
        if "," in token and not re.fullmatch(r"\d{1,3}(,\d{3})+(\.\d+)?", token):
            continue  # a list's commas, not a thousands separator
        try:
            out.add(float(token.replace(",", "")))
        except ValueError:
            continue
    return out


def _texts(folder: Path) -> str:
    """The memo and the code, as one text (bounded: a large submission is read up to _MOST_BYTES)."""
    parts, size = [], 0
    for path in sorted(folder.rglob("*")):
        if any(p in _SKIP for p in path.relative_to(folder).parts) or not path.is_file():
            continue
        if path.suffix not in (*_CODE, ".md") or path.name == "TASK.md":
            continue
        try:
            text = path.read_text(encoding="utf-8", errors="replace")
        except OSError:
            continue
        parts.append(text)
        size += len(text)
        if size > _MOST_BYTES:
            break
    return "\n".join(parts)


def _carried(numbers: dict[str, Any], others: dict[str, Any], inputs: dict[str, Any], found: set[float]) -> set[str]:
    """The flags of `numbers` (an edition's) that the submission carries and `others` (the issued edition's) lack."""
    out = set()
    for flag, value in numbers.items():
        own = set(_values(value)) - set(_values(others.get(flag)))
        if not own:
            continue
        if own & set(_values(inputs.get(flag))) or (flag in _DISTINCT and own & found):
            out.add(flag)
    return out


def fitted_edition(
    folder: Path, *, issued: str, known: Iterable[str], sizing_inputs: dict[str, Any] | None = None
) -> EditionFit | None:
    """The edition among `known` (besides `issued`) whose numbers the submission in `folder` carries, if any.
    `sizing_inputs` is the memo's front matter's (when it could be read)."""
    try:
        own = edition_numbers(issued)
        others = {name: edition_numbers(name) for name in dict.fromkeys(known) if name != issued}
    except EditionError:
        return None
    if not others:
        return None
    found = _numbers_in(_texts(folder))
    inputs = sizing_inputs or {}
    best: EditionFit | None = None
    for name, numbers in others.items():
        theirs = _carried(numbers, own, inputs, found)
        mine = _carried(own, numbers, inputs, found)
        beats = best is None or len(theirs) > len(best.fields)
        if len(theirs) >= MIN_FIELDS and len(theirs) > len(mine) and beats:
            best = EditionFit(name, issued, tuple(sorted(theirs)))
    return best
