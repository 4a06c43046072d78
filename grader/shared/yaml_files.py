"""Reading YAML the one way the grader does: a file's data, or an error naming the file and line.

Every YAML the grader reads from a person (submission.yaml, a memo's front matter, the rubric, an
override, a chaff, unseen input sets) goes through here, so a mistake is always reported the same
way: `path: line N: not valid YAML (what the parser says)`, never a traceback.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any, NoReturn

import yaml

__all__ = ["FrontMatter", "YamlError", "parse_yaml", "read_yaml", "split_front_matter"]


class YamlError(ValueError):
    """A YAML file (or a piece of one) that cannot be read; the message names the file and the line."""


class _Loader(getattr(yaml, "CSafeLoader", yaml.SafeLoader)):  # type: ignore[misc]
    """PyYAML's safe loader (libyaml's when built in, ten times faster), reading `1e-3` as the number a person
    means (YAML 1.2), not the string YAML 1.1 sees."""


def _mapping(loader: _Loader, node: yaml.MappingNode) -> dict[Any, Any]:
    """A mapping, refusing a key given twice: YAML keeps the last and drops the first without a word, and a
    person who wrote both meant one of them."""
    seen: dict[Any, int] = {}
    for key_node, _ in node.value:
        key = loader.construct_object(key_node, deep=True)
        if isinstance(key, str | int | float | bool) and key in seen:
            raise yaml.constructor.ConstructorError(
                None, None, f"the key {key!r} appears twice (first on line {seen[key] + 1})", key_node.start_mark
            )
        if isinstance(key, str | int | float | bool):
            seen[key] = key_node.start_mark.line
    return dict(loader.construct_mapping(node, deep=True))


_Loader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, _mapping)
_Loader.add_implicit_resolver(
    "tag:yaml.org,2002:float",
    re.compile(r"^[-+]?(?:[0-9][0-9_]*)(?:\.[0-9_]*)?[eE][-+]?[0-9]+$"),
    list("-+0123456789"),
)


def parse_yaml(text: str, *, source: str, first_line: int = 1) -> Any:
    """`text`'s data; `first_line` is the line of the file where `text` begins (for the message)."""
    try:
        return yaml.load(text, Loader=_Loader)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        line = f" line {mark.line + first_line}:" if mark is not None else ""
        raise YamlError(f"{source}:{line} not valid YAML ({getattr(exc, 'problem', None) or exc})") from None


def read_yaml(path: Path) -> Any:
    """A YAML file's data, or a YamlError naming the file and line."""
    try:
        text = Path(path).read_text(encoding="utf-8")
    except OSError as exc:
        raise YamlError(f"{path}: cannot read ({exc.strerror})") from None
    except UnicodeDecodeError as exc:
        raise YamlError(f"{path}: not UTF-8 text (byte {exc.start})") from None
    return parse_yaml(text.removeprefix("\ufeff"), source=str(path))


_FENCE = re.compile(r"---[ \t]*")


@dataclass(frozen=True)
class FrontMatter:
    """A Markdown file's YAML front matter: its data, the body after it, and the body's first line."""

    data: dict[str, Any]
    body: str
    body_line: int


def split_front_matter(text: str, *, source: str) -> FrontMatter:
    """The front matter between a first line `---` and the next line `---` (each at the start of its
    line, trailing spaces allowed; a byte-order mark before the first is ignored). It must be a YAML
    mapping. Anything else is a YamlError naming the line."""
    lines = text.removeprefix("\ufeff").splitlines()
    if not lines or not _FENCE.fullmatch(lines[0]):
        return _no_front(source, lines)
    end = next((i for i, line in enumerate(lines[1:], start=1) if _FENCE.fullmatch(line)), None)
    if end is None:
        raise YamlError(f"{source}: the front matter opened on line 1 is never closed with a line `---`")
    data = parse_yaml("\n".join(lines[1:end]), source=source, first_line=2)
    if data is None:
        raise YamlError(f"{source}: lines 1-{end + 1}: the front matter is empty; it must list the memo's figures")
    if not isinstance(data, dict):
        raise YamlError(
            f"{source}: line 2: the front matter must be a YAML mapping (contract:, figures:, ...), "
            f"not {type(data).__name__}"
        )
    return FrontMatter(data, "\n".join(lines[end + 1 :]), end + 2)


def _no_front(source: str, lines: list[str]) -> NoReturn:
    first = lines[0] if lines else ""
    if first.strip() == "---":
        raise YamlError(f"{source}: line 1: the front matter's `---` must start the line (it is indented)")
    raise YamlError(f"{source}: line 1: the memo must start with YAML front matter between `---` lines")
