"""The round as the review page shows it: one entry per candidate, ranked, read from the report folders.

    review = open_round(Path("grades"), blind=False)     # a round folder, or one report folder
    for entry in review.entries(): ...

Everything comes from what `grader grade-many` left: report.json (the ranking, each deliverable's points, the
edition a grade records, the interview's points), `similarity.csv` and `similarity/` (the flagged pairs and
their side-by-side pages), `grades.csv` (its `edition` and `contract` columns, where the summary has them),
`review.json` (a decision taken here) and the run records, judged again once per grade for the unseen
variants' verdicts (report.json leaves those out: a platform may show it to the candidate).
"""

from __future__ import annotations

import csv
import json
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from grader.reports import FILE_NAMES
from grader.review.blinding import Blinding
from grader.review.sheet import REVIEW_FILE
from grader.round.analysis_page import SIMILARITY_CSV
from grader.round.pair_page import FOLDER as PAIRS
from grader.round.pair_page import page_name
from grader.round.summary import CSV_NAME, Row, RowError, rank, read_row, read_rows

__all__ = ["PENDING", "Candidate", "EditionShown", "ReviewError", "ReviewRound", "Similar", "open_round"]


class ReviewError(ValueError):
    """A folder `grader review` cannot open (not a round, a broken report.json); one line names it."""


@dataclass(frozen=True)
class EditionShown:
    name: str
    contract: str = ""
    kit: str = ""


@dataclass(frozen=True)
class Similar:
    other: str  # the other side as the page names it (a code in a blind review), or a leak's name
    deliverable: str
    score: float
    leak: bool
    href: str | None  # the side-by-side page, relative to the round's folder (url_path applied)


@dataclass
class Candidate:
    key: str
    shown: str
    row: Row
    deliverables: dict[str, tuple[float, float]]  # deliverable -> (points, maximum)
    unseen: dict[str, str] | None | str  # criterion -> the unseen variants' verdict; None: no records; PENDING
    similar: list[Similar] = field(default_factory=list)
    edition: EditionShown | None = None
    decision: str = ""
    decision_reason: str = ""

    @property
    def automated(self) -> float:
        return sum(self.row.scores.values())

    @property
    def automated_max(self) -> float:
        return sum(self.row.weights.values())


def _json(path: Path) -> dict[str, Any]:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


PENDING = "pending"  # the unseen verdicts are still being judged from the records


class _Unseen:
    """The unseen variants' verdicts of each grade, judged again from its records (as `grader interview` and
    `grader rejudge` judge them) in a background thread, once, and again only when the records change: a
    page never waits for them, it says they are still being judged."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._cache: dict[Path, tuple[tuple[int, int], dict[str, str] | None]] = {}
        self._queue: list[tuple[Path, tuple[int, int]]] = []
        self._worker: threading.Thread | None = None

    @staticmethod
    def _stamp(folder: Path) -> tuple[int, int] | None:
        from grader.grading.grade import RUNS

        try:
            info = (folder / RUNS / "index.json").stat()
        except OSError:
            return None
        return info.st_mtime_ns, info.st_size

    def get(self, folder: Path) -> dict[str, str] | None | str:
        """The verdicts by criterion, None when there are no records to judge, or PENDING (queued)."""
        stamp = self._stamp(folder)
        if stamp is None:
            return None
        with self._lock:
            cached = self._cache.get(folder)
            if cached is not None and cached[0] == stamp:
                return cached[1]
            if (folder, stamp) not in self._queue:
                self._queue.append((folder, stamp))
            if self._worker is None or not self._worker.is_alive():
                self._worker = threading.Thread(target=self._work, name="unseen-verdicts", daemon=True)
                self._worker.start()
        return PENDING

    def _work(self) -> None:
        while True:  # ends when the queue is empty; get() starts another worker for what comes later
            with self._lock:
                if not self._queue:
                    self._worker = None
                    return
                folder, stamp = self._queue.pop(0)
            verdicts = self._judge(folder)
            with self._lock:
                self._cache[folder] = (stamp, verdicts)

    def wait(self, timeout_s: float) -> bool:
        """Wait (bounded) until every queued grade is judged; whether it was."""
        worker = self._worker
        if worker is not None:
            worker.join(timeout_s)
        return self._worker is None or not self._worker.is_alive()

    @staticmethod
    def _judge(folder: Path) -> dict[str, str] | None:
        from grader.criteria.catalog import registered
        from grader.grading.grade import RUNS
        from grader.grading.rejudge import KEPT_RUBRIC, grade_of
        from grader.records.book import RecordBook, RecordError
        from grader.rubric import RubricError, load_rubric

        kept = folder / RUNS / KEPT_RUBRIC
        try:
            book = RecordBook.read(folder / RUNS)
            grade = grade_of(book, load_rubric(kept if kept.is_file() else None, checks=registered()))
        except (RecordError, RubricError, OSError, ValueError, KeyError):
            return None
        return {c.id: c.unseen.status for c in grade.criteria if c.unseen is not None}


def _edition(report: dict[str, Any], summary: dict[str, str] | None) -> EditionShown | None:
    kit = report.get("extra_data", {}).get("kit", {})
    edition = kit.get("edition") if isinstance(kit, dict) else None
    if isinstance(edition, dict) and edition.get("name"):
        return EditionShown(str(edition["name"]), str(edition.get("contract") or ""), str(edition.get("kit") or ""))
    if summary and summary.get("edition"):
        return EditionShown(summary["edition"], summary.get("contract", ""))
    return None


class ReviewRound:
    """A round folder (or one report folder) opened for review: its candidates, their keys, the blind state."""

    def __init__(self, root: Path, *, single: bool, blind: bool, submissions: Path | None = None) -> None:
        self.root = root
        self.single = single
        self.round_dir = root.parent if single else root  # where the round's codes and reveals are kept
        self.submissions = submissions
        rows = self._read()
        self.blinding = Blinding(self.round_dir, rows, blind=blind)
        self.unseen = _Unseen()  # the round page queues every grade, a candidate's page theirs

    def _read(self) -> list[Row]:
        try:
            return rank([read_row(self.root)]) if self.single else read_rows(self.root)
        except RowError as exc:
            raise ReviewError(str(exc)) from None

    def folder(self, name: str) -> Path:
        return self.root if self.single else self.root / name

    def rows(self) -> list[Row]:
        """The ranking as report.json says now (a person's points included)."""
        return self._read()

    def relative(self, name: str, *parts: str) -> str:
        """A file of candidate `name` as a path under the root, as a page links to it (codes when blind)."""
        rel = "/".join(parts) if self.single else "/".join((name, *parts))
        return self.blinding.url_path(rel)

    def entries(self) -> list[Candidate]:
        """Every candidate, ranked."""
        rows = self.rows()
        pairs, summary = self._pairs({r.name for r in rows}), self._summary_rows()
        return [self._entry(row, pairs, summary) for row in rows]

    def entry(self, key: str) -> Candidate | None:
        """The candidate a page's key stands for (None: no such candidate)."""
        name = self.blinding.name_for(key)
        rows = self.rows()
        row = next((r for r in rows if r.name == name), None) if name else None
        return None if row is None else self._entry(row, self._pairs({r.name for r in rows}), self._summary_rows())

    def _entry(self, row: Row, pairs: dict[str, list[Similar]], summary: dict[str, dict[str, str]]) -> Candidate:
        folder = self.folder(row.name)
        delivered: dict[str, tuple[float, float]] = {}
        for cid, points in row.scores.items():
            got, most = delivered.get(row.deliverables[cid], (0.0, 0.0))
            delivered[row.deliverables[cid]] = (got + points, most + row.weights[cid])
        decision = _json(folder / REVIEW_FILE).get("decision")
        decision = decision if isinstance(decision, dict) else {}
        return Candidate(
            key=self.blinding.key(row.name),
            shown=self.blinding.shown(row.name),
            row=row,
            deliverables=delivered,
            unseen=self.unseen.get(folder),
            similar=pairs.get(row.name, []),
            edition=_edition(_json(folder / FILE_NAMES["json"]), summary.get(row.name)),
            decision=str(decision.get("decision") or ""),
            decision_reason=str(decision.get("reason") or ""),
        )

    def _summary_rows(self) -> dict[str, dict[str, str]]:
        path = self.root / CSV_NAME
        if self.single or not path.is_file():
            return {}
        try:
            with path.open(encoding="utf-8", newline="") as handle:
                return {r["name"]: r for r in csv.DictReader(handle) if r.get("name")}
        except (OSError, ValueError, KeyError):
            return {}

    def _pairs(self, names: set[str]) -> dict[str, list[Similar]]:
        """Every flagged pair of similarity.csv, by each side that is a candidate of this round (`names`)."""
        path = self.root / SIMILARITY_CSV
        if self.single or not path.is_file():
            return {}
        found: dict[str, list[Similar]] = {}
        try:
            with path.open(encoding="utf-8", newline="") as handle:
                flagged = [r for r in csv.DictReader(handle) if r.get("flagged") == "yes"]
        except (OSError, ValueError):
            return {}
        for r in flagged:
            page = f"{PAIRS}/{page_name(r['a'], r['b'])}"
            href = self.blinding.url_path(page) if (self.root / page).is_file() else None
            for side, other in ((r["a"], r["b"]), (r["b"], r["a"])):
                if side not in names:
                    continue
                shown = self.blinding.shown(other) if other in names else other
                try:
                    score = float(r["score"])
                except (TypeError, ValueError):
                    continue
                found.setdefault(side, []).append(Similar(shown, r["deliverable"], score, r.get("leak") == "yes", href))
        for pairs in found.values():
            pairs.sort(key=lambda s: -s.score)
        return found

    def interview_points(self, row: Row) -> tuple[float, float] | None:
        if row.interview_score is None:
            return None
        return row.interview_score, row.interview_max or 0.0


def open_round(path: Path, *, blind: bool = False, submissions: Path | None = None) -> ReviewRound:
    """A round folder (report folders under it) or one report folder, for review; ReviewError when it is neither."""
    if not path.is_dir():
        raise ReviewError(f"{path}: no such folder (give a round folder grader grade-many wrote, or a report folder)")
    root = path.resolve()
    if (root / FILE_NAMES["json"]).is_file():
        return ReviewRound(root, single=True, blind=blind, submissions=submissions)
    review = ReviewRound(root, single=False, blind=blind, submissions=submissions)
    if not review.rows():
        raise ReviewError(f"{path}: not a round (no report folder with {FILE_NAMES['json']} in it) nor a report folder")
    return review
