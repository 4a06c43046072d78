"""The text of a submission's deliverables, kept beside its grade for the round's similarity check.

    from grader.round.sources import snapshot, write_sources, read_sources
    sources = snapshot(Path("returns/alice"))         # or an archive
    write_sources(sources, Path("grades/alice"))      # grades/alice/sources.json.gz
    read_sources(Path("grades/alice")).deliverables["gateway"].files  # {"gateway/app.py": "...", ...}

Which files are a deliverable (submission.yaml names them; docs/grading-many.md):

- the load generator, the gateway and the sizing code: the folder holding the script their
  `command` runs (`python gateway/gateway.py` -> `gateway/`; `python -m loadgen` -> `loadgen/`, or
  `loadgen.py` when that is a module at the top), every source file under it, tests included.
  A script at the top of the submission is that one file. Without a usable submission.yaml the
  starter's folders are used (`loadgen/`, `gateway/`, `sizing/`);
- the memo: the file `memo:` names (else `memo/MEMO.md`), as prose.

A snapshot is written into each report folder when it is graded (`sources.json.gz`), so a round
merged from a Kubernetes Job's pods, or re-judged, is compared as one graded on one machine.
"""

from __future__ import annotations

import gzip
import json
import tempfile
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import Any

from grader.shared.yaml_files import YamlError, read_yaml

__all__ = [
    "CODE_DELIVERABLES",
    "CODE_SUFFIXES",
    "DELIVERABLES",
    "SOURCES_NAME",
    "Deliverable",
    "Sources",
    "SourcesError",
    "read_sources",
    "snapshot",
    "write_sources",
]

SOURCES_NAME = "sources.json.gz"
CODE_DELIVERABLES = ("loadgen", "gateway", "sizing")
DELIVERABLES = (*CODE_DELIVERABLES, "memo")
# Source files by suffix: what a candidate may write a deliverable in. Data, markup and config files
# (.json, .yaml, .md) are left out of the code: they are mostly the contract's shapes, alike in every
# submission.
CODE_SUFFIXES = frozenset(
    {
        ".py",
        ".pyi",
        ".go",
        ".rs",
        ".js",
        ".mjs",
        ".cjs",
        ".ts",
        ".java",
        ".kt",
        ".scala",
        ".c",
        ".h",
        ".cc",
        ".cpp",
        ".hpp",
        ".rb",
        ".sh",
        ".bash",
        ".lua",
        ".php",
        ".swift",
        ".cs",
        ".ex",
        ".exs",
        ".jl",
    }
)
_FALLBACK = {"loadgen": "loadgen", "gateway": "gateway", "sizing": "sizing", "memo": "memo/MEMO.md"}
_SKIP_PARTS = frozenset({"__pycache__", "node_modules", "venv", ".venv", "site-packages"})
MAX_FILE_BYTES = 256 * 1024  # a bigger "source" file is generated or vendored, not written
MAX_FILES = 300  # per deliverable
_VERSION = 1
_PYTHONS = ("python", "python3")


class SourcesError(ValueError):
    """A sources file that cannot be read; names the file."""


@dataclass
class Deliverable:
    root: str  # the folder or file the deliverable was taken from, relative to the submission ("" if none)
    files: dict[str, str] = field(default_factory=dict)  # relative POSIX path -> text, in path order

    @property
    def empty(self) -> bool:
        return not any(text.strip() for text in self.files.values())


@dataclass
class Sources:
    candidate: str
    deliverables: dict[str, Deliverable]
    notes: list[str] = field(default_factory=list)  # how a deliverable was found when not by submission.yaml

    def to_dict(self) -> dict[str, Any]:
        return {
            "version": _VERSION,
            "candidate": self.candidate,
            "notes": self.notes,
            "deliverables": {name: {"root": d.root, "files": d.files} for name, d in self.deliverables.items()},
        }


def _read_contract(folder: Path) -> tuple[dict[str, Any], list[str]]:
    path = folder / "submission.yaml"
    if not path.is_file():
        return {}, ["no submission.yaml: the starter's folders are used"]
    try:
        data = read_yaml(path)
    except YamlError as exc:
        return {}, [f"{exc}: the starter's folders are used"]
    if not isinstance(data, dict):
        return {}, ["submission.yaml is not a mapping: the starter's folders are used"]
    return data, []


def _inside(folder: Path, rel: str) -> Path | None:
    """`folder/rel` when it stays inside `folder` and exists."""
    if not rel or PurePosixPath(rel).is_absolute():
        return None
    path = (folder / rel).resolve()
    root = folder.resolve()
    return path if path.exists() and path.is_relative_to(root) else None


def _command_root(folder: Path, argv: Any) -> Path | None:
    """The folder (or top-level file) a command's code lives in, if the command names one."""
    if not isinstance(argv, list) or not argv or not all(isinstance(a, str | int | float) for a in argv):
        return None
    args = [str(a) for a in argv]
    program = PurePosixPath(args[0]).name
    rest = args[1:] if program in _PYTHONS or program.startswith("python3.") else args
    if rest[:1] == ["-m"] and len(rest) > 1:
        top = rest[1].split(".")[0]
        return _inside(folder, top) or _inside(folder, top + ".py")
    for arg in rest:
        if arg.startswith("-"):
            continue
        path = _inside(folder, arg)
        if path is None:
            continue
        if path.is_dir():
            return path
        return path if path.parent == folder.resolve() else path.parent
    return None


def _code_files(folder: Path, root: Path) -> dict[str, str]:
    if root.is_file():
        candidates = [root]
    else:
        candidates = sorted(p for p in root.rglob("*") if p.is_file() and not p.is_symlink())
    files: dict[str, str] = {}
    base = folder.resolve()
    for path in candidates:
        rel = path.resolve().relative_to(base)
        if path.suffix not in CODE_SUFFIXES or any(part.startswith(".") or part in _SKIP_PARTS for part in rel.parts):
            continue
        if path.stat().st_size > MAX_FILE_BYTES or len(files) >= MAX_FILES:
            continue
        files[rel.as_posix()] = path.read_bytes().decode("utf-8", errors="replace")
    return files


def _snapshot_folder(folder: Path) -> Sources:
    data, notes = _read_contract(folder)
    deliverables: dict[str, Deliverable] = {}
    base = folder.resolve()
    for name in CODE_DELIVERABLES:
        part = data.get(name)
        root = _command_root(folder, part.get("command")) if isinstance(part, dict) else None
        if root is None:
            root = _inside(folder, _FALLBACK[name])
            if root is not None and data:
                notes.append(f"{name}: its command names no file of the submission; {_FALLBACK[name]}/ is used")
        if root is None:
            deliverables[name] = Deliverable("")
            continue
        rel = root.relative_to(base).as_posix() + ("/" if root.is_dir() else "")
        deliverables[name] = Deliverable(rel, _code_files(folder, root))
    memo = _inside(folder, str(data["memo"])) if isinstance(data.get("memo"), str) else None
    if memo is None or not memo.is_file():
        memo = _inside(folder, _FALLBACK["memo"])
    if memo is not None and memo.is_file() and memo.stat().st_size <= MAX_FILE_BYTES:
        rel = memo.relative_to(base).as_posix()
        deliverables["memo"] = Deliverable(rel, {rel: memo.read_bytes().decode("utf-8", errors="replace")})
    else:
        deliverables["memo"] = Deliverable("")
    candidate = data.get("candidate")
    return Sources(str(candidate) if isinstance(candidate, str | int | float) else "", deliverables, notes)


def snapshot(path: Path) -> Sources:
    """The deliverables' text of the submission at `path`: a folder, or an archive (unpacked safely)."""
    path = Path(path)
    if path.is_dir():
        return _snapshot_folder(path)
    from grader.grading.archive import unpack

    with tempfile.TemporaryDirectory(prefix="grader-sources-") as scratch:
        return _snapshot_folder(unpack(path, Path(scratch) / "unpacked"))


def write_sources(sources: Sources, report_folder: Path) -> Path:
    path = Path(report_folder) / SOURCES_NAME
    tmp = path.with_name(f".{path.name}.tmp")
    # mtime=0: the same submission gives the same bytes
    with open(tmp, "wb") as raw, gzip.GzipFile(fileobj=raw, mode="wb", mtime=0) as gz:
        gz.write(json.dumps(sources.to_dict(), sort_keys=True).encode("utf-8"))
    tmp.replace(path)
    return path


def read_sources(report_folder: Path) -> Sources | None:
    """The snapshot kept in a report folder; None when the folder has none (graded before snapshots)."""
    path = Path(report_folder) / SOURCES_NAME
    if not path.is_file():
        return None
    try:
        data = json.loads(gzip.decompress(path.read_bytes()).decode("utf-8"))
        if data.get("version") != _VERSION:
            raise SourcesError(f"{path}: version {data.get('version')!r}, this grader reads version {_VERSION}")
        deliverables = {
            name: Deliverable(str(d["root"]), {str(k): str(v) for k, v in d["files"].items()})
            for name, d in data["deliverables"].items()
        }
        return Sources(str(data["candidate"]), deliverables, [str(n) for n in data.get("notes", [])])
    except SourcesError:
        raise
    except (OSError, EOFError, gzip.BadGzipFile, ValueError, KeyError, TypeError, AttributeError) as exc:
        raise SourcesError(f"{path}: not a sources file the grader wrote ({type(exc).__name__}: {exc})") from None
