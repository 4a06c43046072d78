"""Blind review: the round as its reviewers see it, every candidate a code, no name anywhere.

    from grader.round.blind import write_blind, write_reveal
    blind = write_blind(Path("grades"), rows, analysis)     # grades/blind/: C-7QK2/report.json, index.html, ...
    write_reveal(Path("grades"), Path("names.csv"))        # only when asked: code,name,candidate

`grades/` keeps the named grades (the grader's own: resumable, mergeable); `grades/blind/` is the
copy for reviewers: one folder per code with report.json, report.html, junit.xml and grade.log, and
the round's index.html, grades.csv, the analysis CSVs and side-by-side pages, all with codes. Names
are replaced wherever they appear, including where a report quotes the candidate's own files (a
memo line, a command's output): the report folder's name, `candidate` from submission.yaml, names on
author or copyright lines of the submission's files, and every e-mail address. The run records and
the sources are not copied. Before it returns, every file written is searched for every name; one
found is an error, never a blind copy that names someone.

Codes are random (not derived from the names, so nobody can test a guess against them) and stable:
they are kept in `grades/.blind-codes.json`, beside the named grades, never in the blind copy.

A person scores the blind reports (`grader human-score grades/blind/C-7QK2/report.json human.1=2/3`);
the next summary (`grader grade-many --merge grades --out grades --anonymize`) carries those points
back into the named reports, then writes the blind copy again from them.
"""

from __future__ import annotations

import csv
import functools
import io
import json
import re
import secrets
import shutil
from collections.abc import Callable, Iterable, Mapping
from dataclasses import replace
from pathlib import Path
from typing import Any

from grader.reports import FILE_NAMES
from grader.round.analysis import Analysis
from grader.round.leaks import CODES
from grader.round.sources import SourcesError, read_sources
from grader.round.summary import Row, rank, summary_files, write_files

__all__ = [
    "BLIND",
    "CODES",
    "BlindError",
    "Redactor",
    "carry_back",
    "codes_for",
    "names_of",
    "write_blind",
    "write_reveal",
]

BLIND = "blind"
_COPIED = (*FILE_NAMES.values(), "grade.log", "interview/guide.md", "interview/guide.html")  # the interview's too
_ALPHABET = "23456789ABCDEFGHJKMNPQRSTVWXYZ"  # no 0/O, 1/I/L, U: read aloud without doubt
# from the start of a run of the characters an address may open with only: tried from each of them, a long run
# (a data URI in a page) is read again from every character, in time that grows with its square
_EMAIL = re.compile(r"(?<![\w.+-])[\w.+-]+@[\w-]+(?:\.[\w-]+)+")
_AUTHOR = re.compile(
    r"(?m)(?i:author|written by|prepared by|copyright(?:\s*\(c\))?(?:\s*\d{4})?)[:\s]+"
    r"([A-Z][\w'-]+(?:[ \t]+[A-Z][\w'-]+){1,3})"
)
_TOKEN = re.compile(r"[^\W_]+")


class BlindError(RuntimeError):
    """A blind copy that would still name a candidate, or a codes file that cannot be read; names the file."""


def codes_for(out: Path, names: Iterable[str]) -> dict[str, str]:
    """Each name's code, kept in `out/.blind-codes.json`; a new name gets a new random code."""
    path = out / CODES
    try:
        codes: dict[str, str] = json.loads(path.read_text(encoding="utf-8")) if path.is_file() else {}
        if not isinstance(codes, dict) or not all(isinstance(v, str) for v in codes.values()):
            raise ValueError("not a mapping of names to codes")
    except (OSError, ValueError) as exc:
        raise BlindError(f"{path}: cannot be read ({exc}); it holds the candidates' codes") from None
    taken = set(codes.values())
    changed = False
    for name in names:
        if name not in codes:
            code = ""
            while not code or code in taken:
                code = "C-" + "".join(secrets.choice(_ALPHABET) for _ in range(4))
            codes[name], changed = code, True
            taken.add(code)
    if changed:
        tmp = path.with_name(f".{path.name}.tmp")
        tmp.write_text(json.dumps(codes, indent=1, sort_keys=True) + "\n", encoding="utf-8")
        tmp.replace(path)
    return codes


def names_of(out: Path, rows: Iterable[Row]) -> dict[str, set[str]]:
    """What names each candidate: the folder's name, `candidate`, and author lines in their files."""
    found: dict[str, set[str]] = {}
    for row in rows:
        names = {row.name, row.candidate} - {""}
        try:
            sources = read_sources(out / row.name)
        except SourcesError:
            sources = None
        if sources is not None:
            names.add(sources.candidate)
            for part in sources.deliverables.values():
                for text in part.files.values():
                    names.update(m.group(1).strip() for m in _AUTHOR.finditer(text))
        found[row.name] = {n for n in names if _TOKEN.search(n)}
    return found


@functools.lru_cache(maxsize=512)
def _full_names(alternatives: tuple[tuple[str, ...], ...]) -> re.Pattern[str]:
    """Any of these full names (their tokens, lower case), with any case and up to three separators between tokens,
    as whole words."""
    joined = "|".join(r"[\W_]{0,3}".join(map(re.escape, a)) for a in alternatives)
    return re.compile(r"(?<![^\W_])(?:" + joined + r")(?![^\W_])", re.IGNORECASE)


@functools.lru_cache(maxsize=512)
def _full_name_lower(alternative: tuple[str, ...]) -> re.Pattern[str]:
    """One full name in lower-case text: it opens with its first token as a literal, which the regex engine
    finds by a fast scan (forty times quicker than a pattern that opens with the look-behind, any case)."""
    first = re.escape(alternative[0])
    rest = "".join(r"[\W_]{0,3}" + re.escape(t) for t in alternative[1:])
    return re.compile(first + rf"(?<![^\W_]{first})" + rest + r"(?![^\W_])")


@functools.lru_cache(maxsize=512)
def _name_part(part: str) -> re.Pattern[str]:
    """One part of a name as written, as a whole word (its literal first, for the engine's fast scan)."""
    return re.compile(re.escape(part) + rf"(?<![^\W_]{re.escape(part)})(?![^\W_])")


def _replaced(text: str, spans: Iterable[tuple[int, int]], code: Callable[[str], str]) -> str:
    """`text` with each found span replaced by its code: the leftmost first, the longer where two start together
    (as one pattern of every name, longest first, reads it), and none inside another's replacement."""
    out, at = [], 0
    for start, _, end in sorted((start, -end, end) for start, end in spans):
        if start >= at:
            out += [text[at:start], code(text[start:end])]
            at = end
    return "".join(out) + text[at:]


class Redactor:
    """Replaces every way a name is written with its code, and every e-mail address with [email]."""

    def __init__(self, names: Mapping[str, set[str]], codes: Mapping[str, str]) -> None:
        full: dict[str, str] = {}  # a full name's tokens, lower case, joined -> code
        parts: dict[str, str] = {}  # a part of a full name as written ("Ada"), or a one-word name -> code
        for who, spellings in names.items():
            for spelling in spellings:
                tokens = _TOKEN.findall(spelling)
                if len(tokens) > 1:
                    full["".join(tokens).lower()] = codes[who]
                    # each part as the name writes it; not in lower case, where a part may be a word of the report's
                    parts.update({t: codes[who] for t in tokens if len(t) >= 3})
                elif tokens:
                    parts[tokens[0]] = codes[who]
        self._full = full
        self._parts = parts
        # one pass each: any separators and any case between a full name's tokens ("ada-okonkwo", "Ada Okonkwo")
        alternatives = sorted(
            {
                tuple(t.lower() for t in _TOKEN.findall(s))
                for spellings in names.values()
                for s in spellings
                if len(_TOKEN.findall(s)) > 1
            },
            key=lambda t: -len("".join(t)),
        )
        self._alternatives = alternatives  # longest first, as the pattern tries them
        self._part_names = sorted(parts, key=len, reverse=True)
        self._searched = sorted({s.lower() for spellings in names.values() for s in spellings}, key=len, reverse=True)

    def text(self, text: str) -> str:
        """`text` with every name replaced by its code. A name is written only where its first token is, and a
        report's strings mostly hold none or one: each string is matched against the patterns of the names
        whose first token it holds (a blind copy of a 20-member round redacts some 200,000 strings, and one
        pattern of every name tried at each word's start took half a minute)."""
        if "@" in text:
            text = _EMAIL.sub("[email]", text)
        lower = text.lower()
        held = tuple(a for a in self._alternatives if a[0] in lower)
        if held:
            text = self._full_names(text, lower, held)
        parts = [p for p in self._part_names if p in text]
        if parts:  # a part is a whole word: where one matches no other can
            found = (m.span() for part in parts for m in _name_part(part).finditer(text))
            text = _replaced(text, found, lambda part: self._parts[part])
        return text

    def _full_names(self, text: str, lower: str, held: tuple[tuple[str, ...], ...]) -> str:
        def code(found: str) -> str:
            return self._full["".join(_TOKEN.findall(found)).lower()]

        if len(lower) != len(text):  # a character whose lower case is longer: match the text itself, any case
            return _full_names(held).sub(lambda m: code(m.group()), text)
        return _replaced(text, (m.span() for a in held for m in _full_name_lower(a).finditer(lower)), code)

    def data(self, value: Any) -> Any:
        """A JSON value with every string redacted (keys are the format's own and are kept)."""
        if isinstance(value, str):
            return self.text(value)
        if isinstance(value, list):
            return [self.data(v) for v in value]
        if isinstance(value, dict):
            return {k: self.data(v) for k, v in value.items()}
        return value

    def named(self, text: str) -> list[str]:
        """The names (as given, in lower case) that `text` still holds, any case."""
        lower = text.lower()
        return [s for s in self._searched if s in lower]


def carry_back(out: Path, codes: Mapping[str, str]) -> list[str]:
    """Checklist points recorded in a blind report since its named report was written: into the named report.

    Returns the names whose reports took points."""
    from grader.reports import apply_human_scores

    took = []
    for name, code in codes.items():
        blind, named = out / BLIND / code / FILE_NAMES["json"], out / name / FILE_NAMES["json"]
        if not (blind.is_file() and named.is_file()) or blind.stat().st_mtime <= named.stat().st_mtime:
            continue
        theirs, ours = _human(blind), _human(named)
        if theirs and theirs != {k: v for k, v in ours.items() if k in theirs}:
            apply_human_scores(named, theirs)
            took.append(name)
    return took


def _human(report_json: Path) -> dict[str, tuple[float, float]]:
    try:
        checklist = json.loads(report_json.read_text(encoding="utf-8"))["extra_data"]["human"]["checklist"]
        return {str(i["id"]): (float(i["score"]), float(i["max_score"])) for i in checklist if i["score"] is not None}
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise BlindError(f"{report_json}: cannot read its checklist ({type(exc).__name__}: {exc})") from None


def _copy_report(source: Path, target: Path, redactor: Redactor) -> None:
    target.mkdir(parents=True, exist_ok=True)
    for name in _COPIED:
        path = source / name
        if not path.is_file():
            continue
        text = path.read_text(encoding="utf-8", errors="replace")
        if name == FILE_NAMES["json"]:
            text = json.dumps(redactor.data(json.loads(text)), indent=1, ensure_ascii=False) + "\n"
        else:
            text = redactor.text(text)
        (target / name).parent.mkdir(parents=True, exist_ok=True)
        (target / name).write_text(text, encoding="utf-8", newline="\n")


def write_blind(out: Path, rows: list[Row], analysis: Analysis | None) -> Path:
    """Write the blind copy of the round into `out/blind/` (replacing the last one) and return its path."""
    codes = codes_for(out, [row.name for row in rows])
    redactor = Redactor(names_of(out, rows), codes)
    blind = out / BLIND
    partial = out / f".{BLIND}.partial"
    shutil.rmtree(partial, ignore_errors=True)
    partial.mkdir(parents=True)
    for row in rows:
        _copy_report(out / row.name, partial / codes[row.name], redactor)
    coded = rank([replace(row, name=codes[row.name], candidate=codes[row.name]) for row in rows])
    files = summary_files(coded, analysis.renamed(codes) if analysis is not None else None)
    write_files({name: redactor.text(text) for name, text in files.items()}, partial)
    for path in sorted(p for p in partial.rglob("*") if p.is_file()):
        still = redactor.named(path.read_text(encoding="utf-8", errors="replace"))
        if still:
            shutil.rmtree(partial, ignore_errors=True)
            raise BlindError(
                f"{blind / path.relative_to(partial)}: would still name {', '.join(still)}; no blind copy written"
            )
    if blind.exists():
        shutil.rmtree(blind)
    partial.rename(blind)
    return blind


def write_reveal(out: Path, target: Path, rows: list[Row]) -> Path:
    """The code-to-name map as CSV (code, name, candidate), written only when asked."""
    codes = codes_for(out, [row.name for row in rows])
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerow(["code", "name", "candidate"])
    for row in sorted(rows, key=lambda r: codes[r.name]):
        writer.writerow([codes[row.name], row.name, row.candidate])
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(buffer.getvalue(), encoding="utf-8")
    return target
