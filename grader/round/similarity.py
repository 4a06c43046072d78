"""Similarity in a round: every pair of submissions, and each with a leak corpus, deliverable by deliverable.

    from grader.round.leaks import leak_corpus
    from grader.round.similarity import compare
    leaks, note = leak_corpus()                                   # the kit's reference and chaff, if at hand
    result = compare({"alice": sources_a, "bob": sources_b}, leaks, threshold=0.5)
    result.flagged()                                              # pairs at or above the threshold

The fingerprints are copydetect's (MOSS's approach: Schleimer, Wilkerson and Aiken's winnowing). Code
goes through copydetect's own filter (`filter_code`: Pygments tokens, every variable, function and
class name made one letter, strings one letter, comments and whitespace dropped), so renamed
identifiers, changed comments and layout do not hide a copy, and its k-gram hashes (`hashed_kgrams`)
and boilerplate subtraction are used as they are. A deliverable of many files is one document
(its files filtered one by one, in path order, then joined), so moving functions from file to file
or reordering them hides nothing either. Prose (the memo) is compared on its words: lower-cased,
punctuation and markup dropped.

Three choices differ from copydetect's defaults, each for a reason:

- the winnowing window is 1 (copydetect's `guarantee_threshold` equal to its `noise_threshold`):
  copydetect hashes k-grams with Python's `hash()`, which is salted per process, so with a wider
  window the fingerprints it keeps, and the scores, change from run to run. With a window of 1 every
  k-gram is kept and a score depends only on which k-grams two documents share: the same round gives
  the same figures;
- pairs are scored by a vectorised form of copydetect's own measure (`compare_files`: the characters
  of a document's filtered text covered by k-grams also in the other, over those covered by any of its
  k-grams not in the boilerplate). Its `compare_files` walks the shared hashes in Python, a few
  milliseconds a pair; a round of 100 has 4,950 pairs in each of four deliverables. The pages that
  show a pair's matched regions use copydetect's `get_copied_slices` (matched_regions);
- boilerplate is the starter the kit gives every candidate (starter/: its skeletons and api_client.py
  for code; MEMO.md, TASK.md and README.md for prose): text found there never counts.

A pair's score is the larger of its two shares (a small copy inside a large original is found by the
copy's share). A document with fewer than `MIN_COVERAGE` characters of its own (the starter's text
removed) is too small to say anything and is not scored: a submission that is only the skeleton has
nothing of its own to match.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from grader.round import token_cache
from grader.round.sources import CODE_DELIVERABLES, CODE_SUFFIXES, DELIVERABLES, Sources

__all__ = [
    "DEFAULT_THRESHOLD",
    "K_CODE",
    "K_PROSE",
    "MIN_COVERAGE",
    "Fingerprint",
    "Fingerprinter",
    "Region",
    "SimilarPair",
    "Similarity",
    "SimilarityError",
    "compare",
    "starter_dir",
]

K_CODE = 25  # copydetect's default noise threshold: a match shorter than 25 filtered characters is noise
K_PROSE = 60  # words, lower-cased and single-spaced: about ten words in a row
MIN_COVERAGE = 200  # characters of a document's own (boilerplate removed) below which it is not scored
# Flag a pair at or above this share. Measured on the synthetic round of 20, 50 and 100 (bench/round.py):
# the lowest copy scores 0.887 against what it copied, the highest pair sharing no copied code 0.089.
DEFAULT_THRESHOLD = 0.5
_SEPARATOR = "\x1e"  # between a deliverable's files in its filtered text: no k-gram spans two files
_WORD = re.compile(r"[^\W_]+")
_PROSE_SUFFIXES = (".md", ".txt", ".rst")


class SimilarityError(ValueError):
    """A leak corpus that cannot be read (a missing folder, a broken chaff); names it."""


@dataclass(frozen=True)
class Region:
    """Matched text in one of a document's files: [start, end) in that file's text."""

    file: str
    start: int
    end: int


@dataclass
class Fingerprint:
    """One deliverable of one submission, fingerprinted."""

    owner: str
    deliverable: str
    files: dict[str, str]  # path -> text as shown (newlines normalised)
    text: str  # the filtered (code) or normalised (prose) text the k-grams are taken from
    k: int
    raw_at: np.ndarray  # text position -> (file index, position in that file), shape (len(text), 2)
    positions: np.ndarray  # start of every k-gram kept (not boilerplate), ascending
    hashes: np.ndarray  # its hash, same order
    coverage: int  # characters of `text` covered by the kept k-grams
    also: list[str] = field(default_factory=list)  # leak documents with exactly this text (chaff = reference)

    @property
    def scored(self) -> bool:
        return self.coverage >= MIN_COVERAGE


@dataclass(frozen=True)
class SimilarPair:
    a: str  # a submission of the round
    b: str  # another, or a leak ("reference", "chaff/NAME", "leak/NAME")
    deliverable: str
    share_a: float  # of a's own text, the share found in b
    share_b: float
    leak: bool = False

    @property
    def score(self) -> float:
        return max(self.share_a, self.share_b)


@dataclass
class Similarity:
    threshold: float
    pairs: list[SimilarPair]  # round pairs, and each submission's closest leak per deliverable; highest first
    note: str  # what the round was compared with
    unscored: dict[str, list[str]] = field(default_factory=dict)  # owner -> deliverables handed in, too small to score
    documents: dict[tuple[str, str], Fingerprint] = field(default_factory=dict)  # (owner, deliverable)

    def flagged(self) -> list[SimilarPair]:
        return [p for p in self.pairs if p.score >= self.threshold]

    def highest(self, name: str) -> SimilarPair | None:
        """The pair with the highest score that `name` is part of."""
        mine = [p for p in self.pairs if name in (p.a, p.b)]
        return max(mine, key=lambda p: p.score, default=None)


def starter_dir() -> Path | None:
    """The kit's starter/ (beside the packages, in a checkout and in the kit's image)."""
    import grader

    found = Path(grader.__file__).resolve().parent.parent / "starter"
    return found if found.is_dir() else None


def _normal_newlines(text: str) -> str:
    return text.replace("\r\n", "\n").replace("\r", "\n")


def _filter(path: str, text: str) -> tuple[str, np.ndarray]:
    """copydetect's filtered text of one file and, for each of its characters, the position in `text`."""
    from copydetect.utils import filter_code

    lead = len(text) - len(text.lstrip("\n"))  # Pygments drops leading newlines before it tokenises
    logger = logging.getLogger()
    level = logger.level
    logger.setLevel(logging.ERROR)  # copydetect warns through the root logger about files it cannot tokenise
    try:
        filtered, offsets = filter_code(text, path)
    finally:
        logger.setLevel(level)
    at = np.arange(len(filtered), dtype=np.int64)
    if len(offsets):
        at = at + offsets[:, 1][np.clip(np.searchsorted(offsets[:, 0], at), 0, offsets.shape[0] - 1)] + lead
    return filtered, np.minimum(at, max(len(text) - 1, 0))


def _filter_many(items: list[tuple[str, str]]) -> list[tuple[str, np.ndarray]]:
    return [_filter(path, text) for path, text in items]


def _words(text: str) -> tuple[str, np.ndarray]:
    """Prose as lower-cased words joined by single spaces, and where each character came from."""
    out: list[str] = []
    at: list[int] = []
    for match in _WORD.finditer(text):
        if out:
            out.append(" ")
            at.append(match.start())
        word = match.group().lower()
        if len(word) != match.end() - match.start():  # a letter whose lower case is longer: keep it as it is
            word = match.group()
        out.append(word)
        at.extend(range(match.start(), match.end()))
    return "".join(out), np.array(at, dtype=np.int64)


def _kgram_hashes(text: str, k: int) -> np.ndarray:
    from copydetect.utils import hashed_kgrams

    if len(text) < k:
        return np.zeros(0, dtype=np.int64)
    return np.asarray(hashed_kgrams(text, k), dtype=np.int64)


def _covered(positions: np.ndarray, k: int) -> int:
    """Characters in the union of [p, p + k) over ascending positions."""
    if len(positions) == 0:
        return 0
    return int(np.minimum(np.diff(positions), k).sum()) + k


def _suffix(path: str) -> str:
    return Path(path).suffix or path


class Fingerprinter:
    """Documents made with one boilerplate; a file's filtered text is made once, however many submissions hold it.

    The k-gram hashes are Python's `hash()` (copydetect's), salted per process: every document compared
    must come from one Fingerprinter, in one process. Tokenising (the slow part, Pygments) may run in
    `jobs` processes: it gives the same text wherever it runs."""

    def __init__(self, starter: Path | None, *, jobs: int = 1) -> None:
        self.jobs = jobs
        self._filtered: dict[tuple[str, str], tuple[str, np.ndarray]] = {}
        self.boilerplate = {"code": np.zeros(0, dtype=np.int64), "prose": np.zeros(0, dtype=np.int64)}
        if starter is None:
            return
        code: list[np.ndarray] = []
        prose: list[np.ndarray] = []
        for path in sorted(p for p in starter.rglob("*") if p.is_file() and "__pycache__" not in p.parts):
            text = _normal_newlines(path.read_text(encoding="utf-8", errors="replace"))
            if path.suffix in CODE_SUFFIXES:
                code.append(_kgram_hashes(self._filter(path.name, text)[0], K_CODE))
            elif path.suffix in _PROSE_SUFFIXES:
                prose.append(_kgram_hashes(_words(text)[0], K_PROSE))
        if code:
            self.boilerplate["code"] = np.unique(np.concatenate(code))
        if prose:
            self.boilerplate["prose"] = np.unique(np.concatenate(prose))

    def _filter(self, path: str, text: str) -> tuple[str, np.ndarray]:
        key = (_suffix(path), text)
        if key not in self._filtered:
            kept = token_cache.load(*key)
            self._filtered[key] = kept or _filter(path, text)
            if kept is None:
                token_cache.store(*key, *self._filtered[key])
        return self._filtered[key]

    def prepare(self, files: list[tuple[str, str]]) -> None:
        """Tokenise these code files ahead, `jobs` processes at once (each distinct text once)."""
        todo = list({(_suffix(p), _normal_newlines(t)): (p, _normal_newlines(t)) for p, t in files}.items())
        todo = [(key, item) for key, item in todo if key not in self._filtered]
        for key, _ in todo:  # what an earlier round tokenised
            if (kept := token_cache.load(*key)) is not None:
                self._filtered[key] = kept
        todo = [(key, item) for key, item in todo if key not in self._filtered]
        if self.jobs <= 1 or len(todo) < 8:
            for key, (path, text) in todo:
                self._filtered[key] = _filter(path, text)
                token_cache.store(*key, *self._filtered[key])
            return
        from concurrent.futures import ProcessPoolExecutor

        batches = [todo[i :: self.jobs * 4] for i in range(self.jobs * 4)]
        with ProcessPoolExecutor(max_workers=self.jobs) as pool:
            for batch, done in zip(
                batches, pool.map(_filter_many, [[item for _, item in b] for b in batches]), strict=True
            ):
                for (key, _), result in zip(batch, done, strict=True):
                    self._filtered[key] = result
                    token_cache.store(*key, *result)

    def _text_of(self, files: Mapping[str, str], prose: bool) -> tuple[dict[str, str], str, np.ndarray]:
        shown: dict[str, str] = {}
        parts: list[str] = []
        maps: list[np.ndarray] = []
        for index, (path, raw) in enumerate(sorted(files.items())):
            text = _normal_newlines(raw)
            shown[path] = text
            filtered, at = _words(text) if prose else self._filter(path, text)
            if parts:
                parts.append(_SEPARATOR)
                maps.append(np.array([[index, 0]], dtype=np.int64))
            parts.append(filtered)
            maps.append(np.stack([np.full(len(at), index, dtype=np.int64), at], axis=1))
        raw_at = np.concatenate(maps) if maps else np.zeros((0, 2), dtype=np.int64)
        return shown, "".join(parts), raw_at

    def document(self, owner: str, deliverable: str, files: Mapping[str, str]) -> Fingerprint:
        """One deliverable fingerprinted: every k-gram of its text, less those found in the boilerplate."""
        prose = deliverable not in CODE_DELIVERABLES
        shown, text, raw_at = self._text_of(files, prose)
        k = K_PROSE if prose else K_CODE
        hashes = _kgram_hashes(text, k)
        positions = np.arange(len(hashes), dtype=np.int64)
        keep = ~np.isin(hashes, self.boilerplate["prose" if prose else "code"])
        if _SEPARATOR in text:  # a k-gram that spans two files is no fingerprint
            seps = np.array([m.start() for m in re.finditer(_SEPARATOR, text)], dtype=np.int64)
            after = np.searchsorted(seps, positions)
            keep &= ~((after < len(seps)) & (seps[np.minimum(after, len(seps) - 1)] < positions + k))
        positions, hashes = positions[keep], hashes[keep]
        return Fingerprint(owner, deliverable, shown, text, k, raw_at, positions, hashes, _covered(positions, k))


def _shares(
    a: Fingerprint, b: Fingerprint, ids: dict[int, np.ndarray], masks: dict[int, np.ndarray]
) -> tuple[float, float]:
    """copydetect's similarity both ways: covered characters over `coverage`."""
    in_b = masks[id(b)][ids[id(a)]]
    in_a = masks[id(a)][ids[id(b)]]
    return (_covered(a.positions[in_b], a.k) / a.coverage, _covered(b.positions[in_a], b.k) / b.coverage)


def _score_deliverable(name: str, docs: list[Fingerprint], leaks: list[Fingerprint]) -> list[SimilarPair]:
    """Every pair of round documents, and each round document's closest leak."""
    everyone = docs + leaks
    if not docs:
        return []
    # one small integer per distinct hash, so "is this k-gram in that document" is an array lookup
    every_hash = np.concatenate([d.hashes for d in everyone])
    _, inverse = np.unique(every_hash, return_inverse=True)
    size = int(inverse.max()) + 1 if len(inverse) else 0
    ids: dict[int, np.ndarray] = {}
    masks: dict[int, np.ndarray] = {}
    start = 0
    for d in everyone:
        ids[id(d)] = inverse[start : start + len(d.hashes)]
        start += len(d.hashes)
        mask = np.zeros(size, dtype=bool)
        mask[ids[id(d)]] = True
        masks[id(d)] = mask
    pairs: list[SimilarPair] = []
    for i, a in enumerate(docs):
        for b in docs[i + 1 :]:
            share_a, share_b = _shares(a, b, ids, masks)
            pairs.append(SimilarPair(a.owner, b.owner, name, share_a, share_b))
        best: SimilarPair | None = None
        for leak in leaks:
            share_a, share_b = _shares(a, leak, ids, masks)
            pair = SimilarPair(a.owner, leak.owner, name, share_a, share_b, leak=True)
            if best is None or pair.score > best.score:
                best = pair
        if best is not None:
            pairs.append(best)
    return pairs


def compare(
    round_sources: Mapping[str, Sources],
    leaks: Mapping[str, Sources] | None = None,
    *,
    threshold: float = DEFAULT_THRESHOLD,
    starter: Path | None = None,
    note: str = "",
    jobs: int = 1,
) -> Similarity:
    """Score every pair of the round's submissions, and each with its closest leak, deliverable by deliverable.

    `starter` (the boilerplate) defaults to the kit's starter/; `jobs` processes tokenise the code."""
    prints = Fingerprinter(starter if starter is not None else starter_dir(), jobs=jobs)
    result = Similarity(threshold=threshold, pairs=[], note=note)
    leaks = leaks or {}
    # a chaff that did not touch a deliverable has the reference's text there: one leak document for both
    distinct: dict[str, dict[tuple[tuple[str, str], ...], list[str]]] = {name: {} for name in DELIVERABLES}
    for owner, sources in leaks.items():
        for name in DELIVERABLES:
            part = sources.deliverables.get(name)
            if part is not None and not part.empty:
                distinct[name].setdefault(tuple(sorted(part.files.items())), []).append(owner)
    prints.prepare(
        [
            item
            for name in CODE_DELIVERABLES
            for group in (
                [s.deliverables[name].files for s in round_sources.values() if name in s.deliverables]
                + [dict(files) for files in distinct[name]]
            )
            for item in group.items()
        ]
    )
    for name in DELIVERABLES:
        docs: list[Fingerprint] = []
        for owner in sorted(round_sources):
            part = round_sources[owner].deliverables.get(name)
            if part is None or part.empty:  # not handed in: nothing to compare, nothing to say
                continue
            doc = prints.document(owner, name, part.files)
            result.documents[(owner, name)] = doc
            if doc.scored:
                docs.append(doc)
            else:
                result.unscored.setdefault(owner, []).append(name)
        leak_docs: list[Fingerprint] = []
        for files, owners in distinct[name].items():
            doc = prints.document(owners[0], name, dict(files))
            doc.also = owners[1:]
            if doc.scored:
                leak_docs.append(doc)
                for owner in owners:
                    result.documents[(owner, name)] = doc
        result.pairs += _score_deliverable(name, docs, leak_docs)
    result.pairs.sort(key=lambda p: (-round(p.score, 9), p.a, p.b, DELIVERABLES.index(p.deliverable)))
    return result
