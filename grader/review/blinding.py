"""Blind review in the browser: every candidate a code, no name on any page or in any answer, until a
reviewer reveals one, which is recorded.

A round is reviewed blind when `grader review --blind` asks for it, or when the round was summarised with
`--anonymize` (its `.blind-codes.json` is there): the codes are the round's own (grader/round/blind.py), kept
in that file, so the page, the blind copy and the interviewer's guide say the same code. Every page, every
JSON answer and every file served passes through the round's redactor (the one the blind copy is written
with: names, their spellings, author lines, e-mail addresses) and is then searched for every name; one still
there and the answer is refused, never sent. URLs carry codes too: a path the page links to is written with
codes and read back to the folder's name.

Revealing is a POST that appends a line (who, when, which code) to `ROUND_DIR/review/reveals.jsonl`; from
then on that candidate's name is shown, and only theirs.
"""

from __future__ import annotations

import datetime as dt
import json
import os
import re
import threading
from collections.abc import Iterable
from pathlib import Path

from grader.round.blind import CODES, Redactor, codes_for, names_of
from grader.round.summary import Row

__all__ = ["REVEALS", "Blinding", "NameLeak"]

REVEALS = Path("review") / "reveals.jsonl"
_PAIR = re.compile(r"^(?P<a>.+?)--(?P<b>.+)\.html$")  # a side-by-side page: similarity/<a>--<b>.html


class NameLeak(Exception):
    """An answer that would still name a candidate in a blind review; it is not sent."""


class Blinding:
    """The round's codes and redactor, or nothing at all when the round is not reviewed blind."""

    def __init__(self, round_dir: Path, rows: Iterable[Row], *, blind: bool) -> None:
        rows = list(rows)
        self.round_dir = round_dir
        self.active = blind or (round_dir / CODES).is_file()
        self._lock = threading.Lock()
        self._names = {row.name: row.candidate for row in rows}
        self.codes: dict[str, str] = {}
        self._spellings: dict[str, set[str]] = {}
        if self.active:
            wanted = [row.name for row in rows]
            self.codes = {name: code for name, code in codes_for(round_dir, wanted).items() if name in self._names}
            self._spellings = names_of(round_dir, rows)
        self._by_code = {code: name for name, code in self.codes.items()}
        self._redactor: tuple[frozenset[str], Redactor] | None = None
        self._seen: tuple[tuple[int, int], dict[str, dict[str, str]]] | None = None

    # ---- names and keys -------------------------------------------------------------------------------

    def key(self, name: str) -> str:
        """What the page calls the candidate of report folder `name`: their code, or the folder's name."""
        return self.codes.get(name, name) if self.active else name

    def name_for(self, key: str) -> str | None:
        """The report folder a page's key stands for (None: no such candidate)."""
        if self.active:
            return self._by_code.get(key)
        return key if key in self._names else None

    def revealed(self) -> dict[str, dict[str, str]]:
        """The reveals recorded so far, by code: who revealed it and when (read again when the file changes, by
        this app or another on the same round)."""
        path = self.round_dir / REVEALS
        try:
            info = path.stat()
        except OSError:
            return {}
        if not self.active:
            return {}
        stamp = (info.st_mtime_ns, info.st_size)
        if self._seen is not None and self._seen[0] == stamp:
            return self._seen[1]
        found: dict[str, dict[str, str]] = {}
        for line in path.read_text(encoding="utf-8", errors="replace").splitlines():
            try:
                entry = json.loads(line)
            except ValueError:
                continue
            if isinstance(entry, dict) and isinstance(entry.get("code"), str) and entry["code"] in self._by_code:
                found.setdefault(entry["code"], {"by": str(entry.get("by", "")), "at": str(entry.get("at", ""))})
        self._seen = (stamp, found)
        return found

    def is_hidden(self, name: str) -> bool:
        return self.active and self.codes.get(name) not in self.revealed()

    def shown(self, name: str) -> str:
        """How a page names the candidate: the code while hidden, `Name (code)` once revealed."""
        if not self.active:
            return self._names.get(name) or name
        code = self.codes[name]
        return f"{self._names.get(name) or name} ({code})" if code in self.revealed() else code

    def reveal(self, code: str, by: str) -> None:
        """Record that `by` revealed `code` (one line appended, flushed to disk), and show that name from now on."""
        if code not in self._by_code:
            raise KeyError(code)
        path = self.round_dir / REVEALS
        path.parent.mkdir(parents=True, exist_ok=True)
        line = json.dumps({"code": code, "by": by, "at": dt.datetime.now(dt.UTC).isoformat(timespec="seconds")})
        with self._lock:
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
            try:
                os.write(fd, (line + "\n").encode())
                os.fsync(fd)
            finally:
                os.close(fd)

    # ---- what leaves the app --------------------------------------------------------------------------

    def _current(self) -> Redactor:
        hidden = frozenset(code for code in self._by_code if code not in self.revealed())
        with self._lock:
            if self._redactor is None or self._redactor[0] != hidden:
                names = {n: s for n, s in self._spellings.items() if self.codes.get(n) in hidden}
                self._redactor = (hidden, Redactor(names, {n: self.codes[n] for n in names}))
            return self._redactor[1]

    def scrub(self, text: str) -> str:
        """`text` with every hidden candidate's name replaced by their code; NameLeak if one is still there."""
        if not self.active:
            return text
        redactor = self._current()
        text = redactor.text(text)
        if still := redactor.named(text):
            raise NameLeak(f"would still name {len(still)} candidate(s)")
        return text

    def url_path(self, relative: str) -> str:
        """A path under the round's folder as a page links to it: candidates' folders (and side-by-side pages)
        by their codes."""
        if not self.active:
            return relative
        return "/".join(self._part(part, self.codes) for part in relative.split("/"))

    def file_path(self, relative: str) -> str:
        """The path a page's link (`url_path`) stands for, codes read back to the folders' names."""
        if not self.active:
            return relative
        return "/".join(self._part(part, self._by_code) for part in relative.split("/"))

    @staticmethod
    def _part(part: str, mapping: dict[str, str]) -> str:
        if part in mapping:
            return mapping[part]
        pair = _PAIR.match(part)
        if pair and (pair["a"] in mapping or pair["b"] in mapping):
            return f"{mapping.get(pair['a'], pair['a'])}--{mapping.get(pair['b'], pair['b'])}.html"
        return part
