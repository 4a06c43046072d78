"""The interview's scoring sheet of one candidate as the page loads and saves it, with the version it was
loaded at.

The points go where `grader human-score REPORT_JSON interview.N=SCORE/3` puts them (the same function writes
them: report.json's checklist, its totals and report.html's Interview section, replaced whole); what
human-score has no place for, a note per line and the decision with its reason, goes into `review.json`
beside report.json, with who saved last and when.

A sheet's version is the digest of both files. A save names the version its page was loaded at; under a
lock file per report folder, a save whose version is no longer the current one is refused (Conflict), naming
who saved last and when, so two reviewers never overwrite each other silently, and nothing is written.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import fcntl
import hashlib
import json
import os
import tempfile
import time
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from grader.reports import FILE_NAMES
from grader.reports.interview_part import INTERVIEW_PREFIX
from grader.reports.text import fmt_points
from grader.round.human_scores import record_human_scores

__all__ = [
    "DECISIONS",
    "LOCK_FILE",
    "MAX_POINTS",
    "REVIEW_FILE",
    "Conflict",
    "Line",
    "Sheet",
    "SheetEntry",
    "SheetError",
    "candidate_lock",
    "decision_columns",
    "load_sheet",
    "parse_entry",
    "save_sheet",
]

REVIEW_FILE = "review.json"
LOCK_FILE = ".review.lock"
MAX_POINTS = 3  # each line of the guide's sheet is scored 0 to 3 (docs/interview.md)
DECISIONS = ("advance", "hold", "reject")
NOTE_MAX = 4000
REASON_MAX = 4000
REVIEWER_MAX = 80
FORM_MAX_BYTES = 256 * 1024
LOCK_WAIT_S = 10.0  # a save takes milliseconds; building a guide under the lock, a second or two


class SheetError(ValueError):
    """A form the sheet refuses (400): the message names the field."""


class Conflict(Exception):
    """A save made on a version that is no longer the current one (409): says who saved last, and when."""


@dataclass(frozen=True)
class Line:
    id: str  # interview.N
    item: str  # the guide's question or exercise
    score: float | None
    max_score: float | None
    note: str = ""

    @property
    def shown(self) -> str:
        """The score as the form's value ('' when not scored)."""
        return "" if self.score is None else fmt_points(self.score)


@dataclass(frozen=True)
class Sheet:
    lines: list[Line]
    version: str
    guide: str | None  # the guide's path relative to the report folder, once `grader interview` wrote it
    decision: str = ""
    reason: str = ""
    decided_by: str = ""
    decided_at: str = ""
    saved_by: str = ""
    saved_at: str = ""


@dataclass(frozen=True)
class SheetEntry:
    """What a form asks the sheet to record, checked."""

    version: str
    reviewer: str
    scores: dict[str, int | None] = field(default_factory=dict)  # the lines whose points changed (None: cleared)
    notes: dict[str, str] = field(default_factory=dict)
    decision: str = ""
    reason: str = ""


def _now() -> str:
    return dt.datetime.now(dt.UTC).isoformat(timespec="seconds")


def _digest(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _read(path: Path) -> bytes:
    try:
        return path.read_bytes()
    except FileNotFoundError:
        return b""


def _review(folder: Path) -> dict[str, Any]:
    """review.json, or an empty one; a file that is not one is read as empty and replaced at the next save."""
    try:
        data = json.loads(_read(folder / REVIEW_FILE) or b"{}")
    except ValueError:
        return {}
    return data if isinstance(data, dict) else {}


def load_sheet(folder: Path) -> Sheet:
    """The sheet of the report folder `folder` as it is on disk now. OSError/ValueError when report.json is
    not a kit report."""
    report = folder / FILE_NAMES["json"]
    raw = report.read_bytes()
    human = json.loads(raw)["extra_data"]["human"]
    review_raw = _read(folder / REVIEW_FILE)
    review = _review(folder)
    notes = review.get("notes") if isinstance(review.get("notes"), dict) else {}
    assert isinstance(notes, dict)
    lines = [
        Line(
            id=str(e["id"]),
            item=str(e["item"]),
            score=None if e.get("score") is None else float(e["score"]),
            max_score=None if e.get("max_score") is None else float(e["max_score"]),
            note=str(notes.get(str(e["id"]), "")),
        )
        for e in human["checklist"]
        if str(e.get("id", "")).startswith(INTERVIEW_PREFIX)
    ]
    decision = review.get("decision") if isinstance(review.get("decision"), dict) else {}
    assert isinstance(decision, dict)
    return Sheet(
        lines=lines,
        version=_digest(_digest(raw).encode() + b"\0" + _digest(review_raw).encode())[:20],
        guide=human.get("interview_guide") if isinstance(human.get("interview_guide"), str) else None,
        decision=str(decision.get("decision", "")),
        reason=str(decision.get("reason", "")),
        decided_by=str(decision.get("by", "")),
        decided_at=str(decision.get("at", "")),
        saved_by=str(review.get("saved_by", "")),
        saved_at=str(review.get("saved_at", "")),
    )


# ---- the form -------------------------------------------------------------------------------------------


def _text(name: str, value: str, most: int) -> str:
    if len(value) > most:
        raise SheetError(f"{name}: {len(value)} characters; at most {most}")
    if any(ord(c) < 32 and c not in "\n\r\t" for c in value):
        raise SheetError(f"{name}: holds a control character")
    return value.replace("\r\n", "\n")


def parse_entry(pairs: Sequence[tuple[str, str]], sheet: Sheet, default_reviewer: str) -> SheetEntry:
    """The form's fields (`version`, `reviewer`, `score:ID` and `note:ID` for every line, `decision`, `reason`)
    checked against `sheet`; SheetError names the first field that is wrong."""
    given: dict[str, str] = {}
    lines = {line.id: line for line in sheet.lines}
    known = {"version", "reviewer", "decision", "reason"} | {f"{k}:{i}" for i in lines for k in ("score", "note")}
    for name, value in pairs:
        if name not in known:
            raise SheetError(f"{name[:80]}: no such field on this sheet")
        if name in given:
            raise SheetError(f"{name}: given twice")
        given[name] = value
    version = given.get("version", "").strip()
    if not version:
        raise SheetError("version: missing (reload the page)")
    if len(version) > 64 or not version.isalnum():
        raise SheetError("version: not a version this app wrote (reload the page)")
    reviewer = _text("reviewer", given.get("reviewer", "").strip(), REVIEWER_MAX) or default_reviewer
    if "\n" in reviewer or "\t" in reviewer:
        raise SheetError("reviewer: one line")
    scores: dict[str, int | None] = {}
    notes: dict[str, str] = {}
    for line_id, line in lines.items():
        name = f"score:{line_id}"
        if name not in given:
            raise SheetError(f"{name}: missing")
        value = given[name].strip()
        if value == line.shown:  # as recorded (a CLI's 2.5/4 too): nothing to write
            pass
        elif value == "":
            scores[line_id] = None  # refused by save_sheet when the line has points: after the version check
        elif value in {str(n) for n in range(MAX_POINTS + 1)}:
            scores[line_id] = int(value)
        else:
            raise SheetError(f"{name}: {value[:20]!r} is not a score from 0 to {MAX_POINTS}")
        notes[line_id] = _text(f"note:{line_id}", given.get(f"note:{line_id}", ""), NOTE_MAX)
    decision = given.get("decision", "").strip()
    if decision and decision not in DECISIONS:
        raise SheetError(f"decision: {decision[:20]!r} is not one of {', '.join(DECISIONS)}")
    reason = _text("reason", given.get("reason", ""), REASON_MAX).strip()
    if decision and not reason:
        raise SheetError("reason: a decision needs its reason")
    return SheetEntry(version, reviewer, scores, notes, decision, reason)


# ---- saving ---------------------------------------------------------------------------------------------


@contextlib.contextmanager
def candidate_lock(folder: Path) -> Iterator[None]:
    """The report folder's lock file, held (flock: between processes, and threads with their own open) while a
    sheet is read, checked and written, or its guide built."""
    fd = os.open(folder / LOCK_FILE, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        deadline = time.monotonic() + LOCK_WAIT_S
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if time.monotonic() > deadline:
                    raise Conflict(f"another save of this sheet has held it for {LOCK_WAIT_S:g} s; try again") from None
                time.sleep(0.02)
        yield
    finally:
        os.close(fd)  # closing releases the lock


def _write_json(path: Path, data: Mapping[str, Any]) -> None:
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        os.fchmod(fd, 0o644)
        with os.fdopen(fd, "w", encoding="utf-8") as out:
            out.write(json.dumps(data, indent=1, ensure_ascii=False) + "\n")
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def _when(iso: str) -> str:
    try:
        at = dt.datetime.fromisoformat(iso)
    except ValueError:
        return iso or "an unknown time"
    return at.strftime("%H:%M:%S UTC on %Y-%m-%d")


def _conflict(folder: Path) -> str:
    review = _review(folder)
    report = folder / FILE_NAMES["json"]
    kept = "Nothing of yours was written; what you typed stays in this browser. Reload to see the sheet as it is now."
    if review.get("report_sha256") == _digest(_read(report)):
        return f"{review.get('saved_by') or 'someone'} saved this sheet at {_when(str(review.get('saved_at')))}, after you opened it. {kept}"
    changed = dt.datetime.fromtimestamp(report.stat().st_mtime, dt.UTC).isoformat(timespec="seconds")
    return (
        f"report.json was changed at {_when(changed)} outside this page (grader human-score, grader interview or a "
        f"re-judge), after you opened it. {kept}"
    )


def save_sheet(folder: Path, entry: SheetEntry) -> Sheet:
    """Record `entry` in the report folder: changed points as `grader human-score` records them, notes and the
    decision in review.json (each file replaced whole). Conflict when the sheet changed since `entry.version`;
    SheetError (nothing written) for a recorded score left empty."""
    report = folder / FILE_NAMES["json"]
    with candidate_lock(folder):
        current = load_sheet(folder)
        if entry.version != current.version:
            raise Conflict(_conflict(folder))
        by_id = {line.id: line for line in current.lines}
        for line_id, score in entry.scores.items():
            if score is None and by_id[line_id].score is not None:
                raise SheetError(
                    f"score:{line_id}: a recorded score can be changed but not cleared (as with grader human-score)"
                )
        arguments = [
            f"{line_id}={score}/{MAX_POINTS}"
            for line_id, score in entry.scores.items()
            if score is not None and (by_id[line_id].score, by_id[line_id].max_score) != (score, MAX_POINTS)
        ]
        if arguments:
            record_human_scores(report, arguments)
        review = _review(folder)
        now = _now()
        notes = {k: v for k, v in entry.notes.items() if v}
        decision = review.get("decision") if isinstance(review.get("decision"), dict) else None
        if (entry.decision, entry.reason) != (current.decision, current.reason):
            decision = {"decision": entry.decision, "reason": entry.reason, "by": entry.reviewer, "at": now}
        _write_json(
            folder / REVIEW_FILE,
            {
                "review": 1,
                "notes": notes,
                "decision": decision,
                "saved_by": entry.reviewer,
                "saved_at": now,
                "report_sha256": _digest(report.read_bytes()),  # a later change by another tool is told apart
            },
        )
        return load_sheet(folder)


def decision_columns(folders: Mapping[str, Path]) -> dict[str, dict[str, str]]:
    """grades.csv's `decision` and `decision_reason` columns, by report folder name."""
    columns: dict[str, dict[str, str]] = {"decision": {}, "decision_reason": {}}
    for name, folder in folders.items():
        decision = _review(folder).get("decision")
        if isinstance(decision, dict) and decision.get("decision"):
            columns["decision"][name] = str(decision["decision"])
            columns["decision_reason"][name] = str(decision.get("reason", ""))
    return columns
