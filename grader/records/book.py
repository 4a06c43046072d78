"""Run records: the raw facts of every run a grade made, kept beside its reports in `runs/`.

A grade is two steps that never mix: running (fake servers, the sandbox, the candidate's commands)
and judging (pure functions of what was run). Each run leaves one record: the scenario's settings
and seed, the command line, its exit and output tails, the files a criterion reads, every fake
server's ledger, and the grader's own client timeline where the grader was the client. A record is
written the moment its run ends (gzip, one file per run, byte-identical for the same facts), and
`index.json` says what the grade was asked to do and what it could not judge. `grader rejudge`
reads them back and judges again with another rubric; nothing of the candidate's runs then.

    runs/index.json                 the grade: submission, seed, criteria, contract problems, ...
    runs/loadgen-baseline.json.gz   one record per run, named by its key ("loadgen/baseline")
    runs/loadgen-baseline@2.json.gz a borderline criterion's rerun (attempt 2)

Every record and the index carry `record: RECORD_VERSION`; another version is refused with a
one-line error naming the file, as is a folder with no records (schemas/grader/run-*.schema.json).
A record is checked against its schema once, when it is written; the index keeps each file's sha256,
and reading a grade back checks those instead (a file changed since is refused), so re-judging a grade
costs its judging, not a schema check of every record again.
"""

from __future__ import annotations

import gzip
import hashlib
import json
import threading
from pathlib import Path
from typing import Any

from grader.records.keys import RunKey
from grader.shared.kit_files import schemas_dir
from grader.shared.schema_words import schema_problems

__all__ = ["INDEX", "RECORD_VERSION", "RecordBook", "RecordError", "file_name"]

RECORD_VERSION = 1
INDEX = "index.json"


class RecordError(ValueError):
    """Records that cannot be read back: none there, another version, or a broken file; the message names it."""


def file_name(key: str) -> str:
    """The file of a run key's record (`RunKey.file_name`); a string that is no run key is refused."""
    return RunKey.parse(key).file_name()


def _dump(data: Any) -> bytes:
    return json.dumps(data, separators=(",", ":"), sort_keys=True, allow_nan=True).encode()


class RecordBook:
    """The records of one grade, by key: written to `folder` as they are added (when a folder is given)."""

    def __init__(self, folder: Path | None = None) -> None:
        self.folder = folder
        self.records: dict[str, dict[str, Any]] = {}
        self.index: dict[str, Any] = {}
        self.digests: dict[str, str] = {}  # file name -> sha256 of its bytes, as written
        self._lock = threading.Lock()
        if folder is not None:
            folder.mkdir(parents=True, exist_ok=True)

    def add(self, key: str, section: str, attempt: int, facts: dict[str, Any]) -> dict[str, Any]:
        record = {"record": RECORD_VERSION, "key": key, "section": section, "attempt": attempt, **facts}
        _checked(Path(file_name(key)), record, "run-record")  # once, here: read back, its digest is checked
        raw = gzip.compress(_dump(record), compresslevel=6, mtime=0)
        with self._lock:
            self.records[key] = record
            self.digests[file_name(key)] = hashlib.sha256(raw).hexdigest()
            if self.folder is not None:
                path = self.folder / file_name(key)
                tmp = path.with_name(f".{path.name}.tmp")
                tmp.write_bytes(raw)
                tmp.replace(path)
        return record

    def get(self, key: str) -> dict[str, Any] | None:
        with self._lock:
            return self.records.get(key)

    def write_index(self, index: dict[str, Any]) -> None:
        files = sorted(file_name(k) for k in self.records)
        self.index = {
            "record": RECORD_VERSION,
            **index,
            "files": files,
            **({"digests": {f: self.digests[f] for f in files}} if all(f in self.digests for f in files) else {}),
        }
        if self.folder is not None:
            (self.folder / INDEX).write_text(json.dumps(self.index, indent=1, sort_keys=True) + "\n", encoding="utf-8")

    @classmethod
    def read(cls, folder: Path) -> RecordBook:
        """Every record in `folder` (a grade's `runs/`), checked for version and shape."""
        index_path = folder / INDEX
        if not index_path.is_file():
            raise RecordError(
                f"{folder}: no run records here (no {INDEX}); grade the submission with this grader "
                "version to record its runs"
            )
        index = _checked(index_path, _load(index_path, index_path.read_bytes()), "run-index")
        book = cls(None)
        book.folder, book.index = folder, index
        digests = index.get("digests") or {}
        for name in index["files"]:
            path = folder / name
            if not path.is_file():
                raise RecordError(f"{path}: listed in {INDEX} but missing")
            data = path.read_bytes()
            try:
                raw = gzip.decompress(data)
            except (OSError, EOFError) as exc:
                raise RecordError(f"{path}: not a gzip file ({exc})") from None
            if name in digests:  # written by this grader, checked then: the bytes must be those it wrote
                if hashlib.sha256(data).hexdigest() != digests[name]:
                    raise RecordError(f"{path}: changed since the grade wrote it (its sha256 is not the index's)")
                record = _load(path, raw)
                if not isinstance(record, dict) or record.get("record") != RECORD_VERSION:
                    record = _checked(path, record, "run-record")  # names the version it has
            else:  # an index that keeps no digests: each record is checked as it is read
                record = _checked(path, _load(path, raw), "run-record")
            book.digests[name] = digests.get(name) or hashlib.sha256(data).hexdigest()
            book.records[record["key"]] = record
        return book


def _load(path: Path, raw: bytes) -> Any:
    try:
        return json.loads(raw)
    except ValueError as exc:
        raise RecordError(f"{path}: not JSON ({exc})") from None


def _checked(path: Path, data: Any, schema: str) -> dict[str, Any]:
    version = data.get("record") if isinstance(data, dict) else None
    if version != RECORD_VERSION:
        raise RecordError(
            f"{path}: record version {version!r}; this grader reads version {RECORD_VERSION} "
            "(grade again with this version)"
        )
    problems = schema_problems(schemas_dir() / "grader" / f"{schema}.schema.json", data)
    if problems:
        raise RecordError(f"{path}: {problems[0]}" + (f" (and {len(problems) - 1} more)" if len(problems) > 1 else ""))
    assert isinstance(data, dict)
    return data
