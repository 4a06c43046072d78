"""`grader interview REPORT_DIR`: the interviewer's guide for one graded submission, and its scoring sheet.

Reads the grade's run records (judged again as `grader rejudge` judges them, with the rubric kept beside
them when the grade had one of its own), the question bank and the live exercises (grader/unseen/), and
writes `guide.md` and `guide.html` into `REPORT_DIR/interview/` (or `--out`). The scoring sheet's items
join report.json's checklist as interview.N, so `grader human-score` records the interviewer's points
where a person's points already go, and report.html's Interview section links to the guide.

Where the round is reviewed blind (`grader grade-many --anonymize` left `.blind-codes.json` beside the report
folders), the guide names the candidate by their code alone: every text is redacted as the blind copy is,
searched for every name before it is written, and the guide is written into the blind copy too.
"""

from __future__ import annotations

import os
from pathlib import Path

from grader.criteria.catalog import registered
from grader.grading.grade import RUNS
from grader.grading.rejudge import KEPT_RUBRIC
from grader.interview.figures import field_names
from grader.interview.guide import Guide, build_guide
from grader.interview.render import to_html, to_markdown
from grader.records.book import RecordBook, RecordError
from grader.reports import FILE_NAMES, HumanScoreError, set_interview
from grader.round.blind import BLIND, CODES, BlindError, Redactor, codes_for, names_of
from grader.round.summary import RowError, read_row
from grader.rubric import RubricError, load_rubric
from grader.rubric.live_pool import LivePoolError, kit_rubric_data, load_pool
from grader.rubric.questions import QuestionBankError, load_questions

__all__ = ["FOLDER", "InterviewError", "write_interview"]

FOLDER = "interview"  # REPORT_DIR/interview/guide.md, guide.html


class InterviewError(ValueError):
    """No guide can be written as asked; the message says why in one line (or one per problem of the bank)."""


def _records(report_dir: Path) -> RecordBook:
    try:
        return RecordBook.read(report_dir / RUNS)
    except RecordError as exc:
        blind = report_dir.resolve().parent.name == BLIND
        raise InterviewError(
            f"{exc}" + ("; a blind copy holds no records: give the named report folder" if blind else "")
        ) from None


def _guide(book: RecordBook, report_dir: Path, who: str, submission: str) -> Guide:
    kept = report_dir / RUNS / KEPT_RUBRIC
    try:
        rubric = load_rubric(kept if kept.is_file() else None, checks=registered())
        bank = load_questions(load_rubric(), figures=field_names())
        pool = load_pool(kit_rubric_data())
    except (RubricError, QuestionBankError, LivePoolError) as exc:
        raise InterviewError(str(exc)) from None
    if bank is None:
        raise InterviewError("this kit has no question bank (grader/unseen/questions.yaml is the grader's alone)")
    return build_guide(book, rubric, bank, pool, who=who, submission=submission)


def _blind(report_dir: Path) -> tuple[str, Redactor] | None:
    """The candidate's code and the round's redactor, when the round is reviewed blind."""
    round_dir = report_dir.resolve().parent
    if not (round_dir / CODES).is_file():
        return None
    try:
        row = read_row(report_dir)
        code = codes_for(round_dir, [row.name])[row.name]
        return code, Redactor(names_of(round_dir, [row]), {row.name: code})
    except (RowError, BlindError) as exc:
        raise InterviewError(f"{report_dir}: the round is reviewed blind, and {exc}") from None


def _write(folder: Path, name: str, text: str) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / name
    tmp = path.with_name(f".{name}.tmp")
    tmp.write_text(text, encoding="utf-8", newline="\n")
    tmp.replace(path)
    return path


def write_interview(report_dir: Path, out: Path | None = None) -> list[Path]:
    """Write the guide for the grade in `report_dir` and register its scoring sheet; the guide's paths."""
    report_dir = Path(report_dir)
    book = _records(report_dir)
    blind = _blind(report_dir)
    who = blind[0] if blind else str(book.index.get("candidate") or report_dir.resolve().name)
    submission = blind[0] if blind else str(book.index.get("submission") or report_dir)
    guide = _guide(book, report_dir, who, submission)
    out = Path(out) if out is not None else report_dir / FOLDER
    href = Path(os.path.relpath(report_dir / FILE_NAMES["html"], out)).as_posix()
    options = {
        "report_href": href,
        "report_json": FILE_NAMES["json"],
        "submission_arg": "SUBMISSION" if blind else submission,
    }
    texts = {"guide.md": to_markdown(guide, **options), "guide.html": to_html(guide, **options)}
    items = guide.sheet
    if blind is not None:
        redactor = blind[1]
        texts = {name: redactor.text(text) for name, text in texts.items()}
        items = [redactor.text(item) for item in items]
        for name, text in texts.items():
            if still := redactor.named(text):
                raise InterviewError(f"{out / name}: would still name {', '.join(still)}; no guide written")
    paths = [_write(out, name, text) for name, text in texts.items()]
    targets = [(report_dir, out)]
    if blind is not None and (copy := report_dir.resolve().parent / BLIND / blind[0]).is_dir():
        targets.append((copy, copy / FOLDER))  # the reviewers' copy: the same guide, the same sheet
        for name, text in texts.items():
            _write(copy / FOLDER, name, text)
    for folder, guide_folder in targets:
        report_json = folder / FILE_NAMES["json"]
        if report_json.is_file():
            try:
                set_interview(report_json, items, Path(os.path.relpath(guide_folder / "guide.html", folder)).as_posix())
            except HumanScoreError as exc:
                raise InterviewError(str(exc)) from None
    return paths
