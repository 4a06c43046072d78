"""The parts of the candidate's brief (starter/TASK.md) written from the kit's own data, never by hand.

    python -m grader.kit.brief            # exit 1 and say which part is stale
    python -m grader.kit.brief --write    # rewrite them

Each part sits between `<!-- NAME: begin -->` and `<!-- NAME: end -->` lines. Today one: `unseen-domains`,
every dimension the unseen variants draw and its domain (grader/rubric/domains.yaml), so the brief states the
ranges of what the grade moves and a test holds the draws inside them.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from grader.rubric.domains import load_domains
from grader.shared.kit_files import kit_dir

__all__ = ["BRIEF", "render_domains", "stale_parts", "write_parts"]

BRIEF = kit_dir("starter") / "TASK.md"


def render_domains() -> str:
    lines = [f"  - {d.text};" for d in load_domains()]  # nested in the brief's "Unseen variants" item
    lines[-1] = lines[-1].removesuffix(";") + "."
    return "\n".join(lines)


_PARTS = {"unseen-domains": render_domains}


def _marked(text: str, name: str) -> tuple[int, int]:
    """Where the part's text lies: after its begin marker's line, up to its end marker's line."""
    begin, end = f"<!-- {name}: begin -->\n", f"<!-- {name}: end -->"
    start = text.index(begin) + len(begin)
    return start, text.rindex("\n", 0, text.index(end, start)) + 1


def stale_parts(path: Path = BRIEF) -> list[str]:
    """The generated parts of the brief that differ from what the kit's data gives."""
    text = path.read_text(encoding="utf-8")
    out = []
    for name, render in _PARTS.items():
        start, stop = _marked(text, name)
        if text[start:stop] != render() + "\n":
            out.append(name)
    return out


def write_parts(path: Path = BRIEF) -> None:
    text = path.read_text(encoding="utf-8")
    for name, render in _PARTS.items():
        start, stop = _marked(text, name)
        text = text[:start] + render() + "\n" + text[stop:]
    path.write_text(text, encoding="utf-8")


def main() -> int:
    parser = argparse.ArgumentParser(prog="python -m grader.kit.brief", description=__doc__.split("\n")[0])
    parser.add_argument("--write", action="store_true", help="rewrite the generated parts of starter/TASK.md")
    args = parser.parse_args()
    if args.write:
        write_parts()
        return 0
    stale = stale_parts()
    for name in stale:
        print(f"{BRIEF}: the part {name} is stale: run python -m grader.kit.brief --write", file=sys.stderr)
    return 1 if stale else 0


if __name__ == "__main__":
    sys.exit(main())
