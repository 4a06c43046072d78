"""The parts of the kit's texts written from its own data, never by hand, so a list in a text cannot drift.

    python -m grader.kit.generated            # exit 1 and say which part is stale
    python -m grader.kit.generated --write    # rewrite them

Each part sits between `<!-- NAME: begin -->` and `<!-- NAME: end -->` lines:
- starter/TASK.md `unseen-domains`: every dimension the unseen variants draw and its domain
  (grader/rubric/domains.yaml), so the brief states the ranges of what the grade moves;
- starter/TASK.md `memo-scenario`: what the memo sizes for, the edition's (grader/rubric/editions.py);
- starter/TASK.md `rule-sheet`: every public criterion's weight, runs and tolerance, every published scenario,
  the gateway's config and cases, and the sizing check's input sets, as the edition's rubric holds them;
- submissions/README.md `chaff`: every chaff, its defect and its targets (each chaff.yaml);
- docs/architecture.md `rooms`: the grader's rooms floor by floor, each with its job (grader/kit/rooms.py);
- docs/contract.md `flags`: every command's flags, required or with its default (the starter's skeletons,
  grader/kit/flags.py).
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from pathlib import Path

from grader.kit.chaff import list_chaff
from grader.kit.flags import render_flags
from grader.kit.rooms import FLOORS
from grader.kit.rule_sheet import render_memo_scenario, render_rule_sheet
from grader.rubric.domains import load_domains
from grader.shared.kit_files import kit_dir, submissions_dir

__all__ = [
    "BRIEF",
    "is_current",
    "render_chaff",
    "render_domains",
    "render_rooms",
    "replace_part",
    "stale_parts",
    "write_parts",
]

BRIEF = kit_dir("starter") / "TASK.md"
ROOT = Path(__file__).resolve().parents[2]


def render_domains() -> str:
    lines = [f"  - {d.text};" for d in load_domains()]  # nested in the brief's "Unseen variants" item
    lines[-1] = lines[-1].removesuffix(";") + "."
    return "\n".join(lines)


def render_chaff() -> str:
    """The chaff table: each chaff, its defect, its targets, and whether only the unseen variants catch it."""
    lines = ["| chaff | defect | targets |", "| --- | --- | --- |"]
    for c in list_chaff(submissions_dir() / "chaff"):
        targets = ", ".join(c.targets) if c.targets else "every criterion (scores 0)"
        seen = " (unseen variants only)" if c.unseen else ""
        lines.append(f"| `{c.name}` | {c.defect.replace('|', '/')}{seen} | {targets} |")
    return "\n".join(lines)


def render_rooms() -> str:
    """The grader's rooms by floor, lowest first, each with its job."""
    lines = ["| floor | room | job |", "| --- | --- | --- |"]
    for floor, rooms in enumerate(FLOORS):
        for room, job in rooms:
            name = (
                "`grader/__init__.py`"
                if room == "__init__"
                else f"`{room}/`"
                if (ROOT / "grader" / room).is_dir()
                else f"`{room}.py`"
            )
            lines.append(f"| {floor} | {name} | {job} |")
    return "\n".join(lines)


#: (the file, the part's name) -> what renders it (the default edition's, for the parts an edition moves).
_PARTS = {
    (BRIEF, "unseen-domains"): render_domains,
    (BRIEF, "memo-scenario"): render_memo_scenario,
    (BRIEF, "rule-sheet"): render_rule_sheet,
    (ROOT / "submissions" / "README.md", "chaff"): render_chaff,
    (ROOT / "docs" / "architecture.md", "rooms"): render_rooms,
    (ROOT / "docs" / "contract.md", "flags"): render_flags,
}


def _marked(text: str, name: str) -> tuple[int, int]:
    """Where the part's text lies: after its begin marker's line, up to its end marker's line."""
    begin, end = f"<!-- {name}: begin -->\n", f"<!-- {name}: end -->"
    start = text.index(begin) + len(begin)
    return start, text.rindex("\n", 0, text.index(end, start)) + 1


def replace_part(text: str, name: str, part: str) -> str:
    """`text` with its part `name` (between its markers) replaced by `part`."""
    start, stop = _marked(text, name)
    return text[:start] + part + "\n" + text[stop:]


def is_current(text: str, name: str, render: Callable[[], str]) -> bool:
    """Whether `text`'s part `name` is what `render` writes, byte for byte."""
    start, stop = _marked(text, name)
    return text[start:stop] == render() + "\n"


def stale_parts() -> list[str]:
    """The generated parts (`FILE: NAME`) that differ from what the kit's data gives."""
    return [
        f"{path.relative_to(ROOT) if path.is_relative_to(ROOT) else path}: {name}"
        for (path, name), render in _PARTS.items()
        if not is_current(path.read_text(encoding="utf-8"), name, render)
    ]


def write_parts() -> None:
    for (path, name), render in _PARTS.items():
        path.write_text(replace_part(path.read_text(encoding="utf-8"), name, render()), encoding="utf-8")


def main() -> int:
    parser = argparse.ArgumentParser(prog="python -m grader.kit.generated", description=__doc__.split("\n")[0])
    parser.add_argument("--write", action="store_true", help="rewrite the generated parts of the kit's texts")
    args = parser.parse_args()
    if args.write:
        write_parts()
        return 0
    stale = stale_parts()
    for part in stale:
        print(f"{part} is stale: run python -m grader.kit.generated --write", file=sys.stderr)
    return 1 if stale else 0


if __name__ == "__main__":
    sys.exit(main())
