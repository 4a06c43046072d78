"""Read YAML manifests into documents that remember where each field came from.

PyYAML's `safe_load_all` loses line numbers and silently keeps the last of two equal keys.
Here each document keeps a map from field path to line, and repeated keys are recorded,
because Kubernetes' strict decoding (and kubeconform -strict) rejects them. Timestamps stay
strings, as Kubernetes' own YAML decoding leaves them. A YAML error ends its file but keeps
the documents before it, and is reported with file, line and column.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

__all__ = ["Document", "Duplicate", "LoadProblem", "PathKey", "display_name", "load_paths", "load_text", "yaml_files"]

PathKey = tuple[str | int, ...]
_YAML_SUFFIXES = (".yaml", ".yml", ".json")


class _Loader(yaml.SafeLoader):
    """SafeLoader without the timestamp resolver: `2024-01-01` stays a string."""


_Loader.yaml_implicit_resolvers = {
    first: [(tag, rx) for tag, rx in resolvers if tag != "tag:yaml.org,2002:timestamp"]
    for first, resolvers in yaml.SafeLoader.yaml_implicit_resolvers.items()
}


@dataclass(frozen=True)
class LoadProblem:
    """Input that could not be read as YAML documents."""

    file: str
    message: str
    line: int | None = None
    column: int | None = None


@dataclass(frozen=True)
class Duplicate:
    """A key given twice in one mapping; YAML keeps only the last."""

    path: PathKey
    first_line: int
    second_line: int


@dataclass
class Document:
    """One YAML document with its source position and field lines."""

    data: dict[str, Any]
    file: str
    line: int
    lines: dict[PathKey, int] = field(default_factory=dict, repr=False)
    duplicates: list[Duplicate] = field(default_factory=list)

    @property
    def kind(self) -> str:
        return str(self.data.get("kind") or "")

    @property
    def api_version(self) -> str:
        return str(self.data.get("apiVersion") or "")

    @property
    def metadata(self) -> dict[str, Any]:
        meta = self.data.get("metadata")
        return meta if isinstance(meta, dict) else {}

    @property
    def name(self) -> str:
        return str(self.metadata.get("name") or "")

    @property
    def namespace(self) -> str | None:
        ns = self.metadata.get("namespace")
        return str(ns) if ns else None

    @property
    def ref(self) -> str:
        """`Kind/name`, the way kubectl names a resource."""
        return f"{self.kind or '?'}/{self.name or '?'}"

    def line_of(self, path: Sequence[str | int]) -> int:
        """The line of `path`, or of its nearest ancestor that is in the document."""
        key = tuple(path)
        while key:
            if key in self.lines:
                return self.lines[key]
            key = key[:-1]
        return self.line


def _index(node: yaml.Node, path: PathKey, doc: Document) -> None:
    """Record the line of every field under `node` and every repeated key."""
    if isinstance(node, yaml.MappingNode):
        seen: dict[str, int] = {}
        for key_node, value_node in node.value:
            key = key_node.value if isinstance(key_node, yaml.ScalarNode) else str(key_node.start_mark)
            line = key_node.start_mark.line + 1
            if key in seen:
                doc.duplicates.append(Duplicate(path + (key,), seen[key], line))
            seen[key] = line
            doc.lines[path + (key,)] = line
            _index(value_node, path + (key,), doc)
    elif isinstance(node, yaml.SequenceNode):
        for i, item in enumerate(node.value):
            doc.lines[path + (i,)] = item.start_mark.line + 1
            _index(item, path + (i,), doc)


def _problem(file: str, exc: yaml.YAMLError) -> LoadProblem:
    mark = getattr(exc, "problem_mark", None) or getattr(exc, "context_mark", None)
    problem = getattr(exc, "problem", None) or str(exc)
    context = getattr(exc, "context", None)
    context_mark = getattr(exc, "context_mark", None)
    if context and context_mark is not None and context_mark is not mark:
        context = f"{context} started at line {context_mark.line + 1}"
    message = f"{context}: {problem}" if context else str(problem)
    if mark is None:
        return LoadProblem(file, message)
    return LoadProblem(file, message, mark.line + 1, mark.column + 1)


def load_text(text: str, file: str) -> tuple[list[Document], list[LoadProblem]]:
    """Every mapping document in `text`; empty documents are skipped."""
    docs: list[Document] = []
    problems: list[LoadProblem] = []
    loader = _Loader(text)
    try:
        number = 0
        while True:
            try:
                if not loader.check_node():
                    break
                node = loader.get_node()
                data = loader.construct_document(node) if node is not None else None
            except yaml.YAMLError as exc:
                problems.append(_problem(file, exc))
                break
            number += 1
            if node is None or data is None:
                continue
            line = node.start_mark.line + 1
            if not isinstance(data, dict):
                problems.append(LoadProblem(file, f"document {number} is a {type(data).__name__}, not a mapping", line))
                continue
            doc = Document(data=data, file=file, line=line)
            _index(node, (), doc)
            docs.append(doc)
    finally:
        loader.dispose()
    return docs, problems


def yaml_files(paths: Iterable[Path]) -> list[Path]:
    """The files to read: each file as given, each folder's YAML/JSON files recursively, sorted."""
    out: list[Path] = []
    for path in paths:
        if path.is_dir():
            out.extend(sorted(p for p in path.rglob("*") if p.is_file() and p.suffix.lower() in _YAML_SUFFIXES))
        else:
            out.append(path)
    return out


def display_name(path: Path) -> str:
    """A path relative to the working folder when it is inside it, else as given."""
    try:
        return str(path.resolve().relative_to(Path.cwd().resolve()))
    except ValueError:
        return str(path)


def load_paths(paths: Iterable[Path]) -> tuple[list[Document], list[LoadProblem]]:
    """Documents from files and folders, with every read or parse problem."""
    docs: list[Document] = []
    problems: list[LoadProblem] = []
    for path in yaml_files(paths):
        name = display_name(path)
        try:
            text = path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            problems.append(LoadProblem(name, f"cannot read: {exc}"))
            continue
        file_docs, file_problems = load_text(text, name)
        docs.extend(file_docs)
        problems.extend(file_problems)
    return docs, problems
