"""report.json in the shape of Gradescope's autograder `results.json`.

Gradescope knows two test statuses, "passed" and "failed", and four visibilities (hidden,
after_due_date, after_published, visible). A criterion that is inconclusive or skipped becomes
"failed" with 0 points; its output starts with the real status in capitals and its tags carry it,
so nothing is lost. Public criteria are "visible"; hidden ones "after_published", so a candidate
sees them only once the hiring team releases the grades.

Every output is plain text (`output_format` "text" at every level): Gradescope's default for the
top-level output renders HTML, and candidate text must never be rendered.

A platform may show this file to the candidate, so nothing in it names what the candidate must not
see: a hidden criterion's test carries its title and verdict, never its scenario, evidence or
replay command, and no criterion carries its unseen variants' evidence (report.html and the run
records have them).

The kit's own data (the whole Grade, less plots and the above) sits under `extra_data.kit`, and the checklist
a person still has to judge under `extra_data.human`, each item with `score: null` until a reader
records one; `apply_human_scores` then folds those points into the totals. The interview's scoring sheet
(`grader interview`) joins that checklist as interview.N items, with the guide's path beside them
(`set_interview`), so an interviewer's points go where a person's points already go.
"""

from __future__ import annotations

import json
import math
import os
import tempfile
from collections.abc import Mapping
from dataclasses import replace
from pathlib import Path
from typing import Any

from grader.outcome import CriterionResult, Grade
from grader.reports.interview_part import INTERVIEW_PREFIX, refresh
from grader.reports.text import awarded, clean, fmt_points, replay_command, summary_lines

__all__ = [
    "VISIBILITY",
    "HumanScoreError",
    "apply_human_scores",
    "dumps",
    "person_part",
    "restore_person_part",
    "set_interview",
    "to_gradescope",
    "write_document",
]

VISIBILITY = {"public": "visible", "hidden": "after_published"}
HUMAN_PREFIX = "human."


class HumanScoreError(ValueError):
    """A recorded human score that does not fit the report: unknown item, or points out of range."""


def _cleaned(value: Any) -> Any:
    """JSON-safe data: text cleaned, NaN and infinities (a candidate's figures) as strings,
    anything JSON has no type for as its text."""
    if isinstance(value, str):
        return clean(value)
    if isinstance(value, dict):
        return {clean(k): _cleaned(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_cleaned(v) for v in value]
    if isinstance(value, float) and not math.isfinite(value):
        return str(value)
    if value is None or isinstance(value, (bool, int, float)):
        return value
    return clean(value)


def _test(grade: Grade, c: CriterionResult) -> dict[str, Any]:
    gradescope_status = "passed" if c.status == "passed" else "failed"
    score = awarded(c)
    output = clean(c.output)
    if c.status in ("inconclusive", "skipped") and not output.startswith(f"{c.status.upper()}:"):
        # Gradescope shows two statuses: say the real one first, unless the output already does (with its reason).
        why = "0 points until a person judges it" if c.status == "inconclusive" else "not run; 0 points"
        output = f"{c.status.upper()}: {why}.\n{output}"
    if c.tolerance and clean(c.tolerance) not in output:
        output += f"\nTolerance: {clean(c.tolerance)}"
    if command := replay_command(grade, c, candidate=True):
        output += f"\nReplay: {command}"
    tags = [clean(c.deliverable), c.status] + ([clean(c.scenario)] if c.scenario and c.visibility == "public" else [])
    if c.visibility == "hidden":  # its verdict, not how it was found: that would name what the candidate never saw
        output = f"{c.status.upper()}: a hidden criterion; the hiring team's report has its evidence."
    return {
        "name": f"{clean(c.id)}: {clean(c.title)}",
        "name_format": "text",
        "score": round(score, 6),
        "max_score": round(c.weight, 6),
        "status": gradescope_status,
        "visibility": VISIBILITY[c.visibility],
        "output": output,
        "output_format": "text",
        "tags": tags,
        "extra_data": {
            "id": clean(c.id),
            "status": c.status,
            "attempts": c.attempts,
            "duration_s": round(c.duration_s, 6),
        },
    }


def _kit_data(grade: Grade) -> dict[str, Any]:
    # the plots and the unseen verdicts are left out before the grade becomes a dict, not copied and then
    # dropped: they are most of a grade's data, and a re-judged round writes this file for every grade
    shown = replace(
        grade, criteria=[replace(c, evidence=replace(c.evidence, plots=[]), unseen=None) for c in grade.criteria]
    )
    data = shown.to_dict()
    for criterion in data["criteria"]:
        criterion["evidence"].pop("plots", None)
        criterion.pop("unseen", None)  # a platform may show this file to the candidate: report.html keeps it
        if criterion["visibility"] == "hidden":  # its fields kept, emptied
            evidence = {k: [] if isinstance(v, list) else "" for k, v in criterion["evidence"].items()}
            criterion.update(output="", scenario="", evidence=evidence, closest="", rerun="")
    cleaned: dict[str, Any] = _cleaned(data)
    return cleaned


def to_gradescope(grade: Grade) -> dict[str, Any]:
    """The results.json document for `grade`; its totals equal the Grade's."""
    tests = [_test(grade, c) for c in grade.criteria]
    return {
        "score": round(sum(t["score"] for t in tests), 6),
        "max_score": round(sum(t["max_score"] for t in tests), 6),
        "execution_time": round(grade.duration_s, 3),
        "output": "\n".join(summary_lines(grade)),
        "output_format": "text",
        "test_output_format": "text",
        "test_name_format": "text",
        "visibility": "visible",
        "stdout_visibility": "hidden",
        "tests": tests,
        "extra_data": {
            "kit": _kit_data(grade),
            "human": {
                "checklist": [
                    {"id": f"{HUMAN_PREFIX}{i}", "item": clean(item), "score": None, "max_score": None}
                    for i, item in enumerate(grade.human_checklist, start=1)
                ],
                "applied": False,
            },
        },
    }


def dumps(document: Mapping[str, Any]) -> str:
    """The file's text: stable key order as built, UTF-8 friendly, one trailing newline."""
    return json.dumps(document, indent=2, ensure_ascii=False, allow_nan=False) + "\n"


def write_document(report_json: Path, document: Mapping[str, Any]) -> None:
    """Replace `report_json` whole: a temporary file in its folder, then a rename, so a reader (or a crash)
    never meets half a file, and two writers each leave a whole one."""
    path = Path(report_json)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        os.fchmod(fd, path.stat().st_mode & 0o777 if path.exists() else 0o644)  # mkstemp's 0600 would hide it
        with os.fdopen(fd, "w", encoding="utf-8", newline="\n") as out:
            out.write(dumps(document))
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def _points(item_id: str, value: Any) -> tuple[float, float]:
    """(score, max_score) from a recorded value: a pair, or a mapping with both keys."""
    if isinstance(value, Mapping):
        value = (value.get("score"), value.get("max_score"))
    if not (
        isinstance(value, (list, tuple))
        and len(value) == 2
        and all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in value)
    ):
        raise HumanScoreError(f"{item_id}: a human score is (score, max_score) as two numbers, got {value!r}")
    score, max_score = float(value[0]), float(value[1])
    if not (max_score > 0 and 0 <= score <= max_score):
        raise HumanScoreError(
            f"{item_id}: score {score:g} must lie in 0..max_score and max_score above 0 (got max_score {max_score:g})"
        )
    return score, max_score


def apply_human_scores(report_json: Path, scores: Mapping[str, Any]) -> dict[str, Any]:
    """Record a person's points for checklist items in `report_json`, in place, and return it.

    `scores` maps a checklist item's id ("human.1") or its exact text to (score, max_score).
    Each scored item becomes a test named after it (tag "human", after_published) and the
    top-level totals become the sum of every test. Applying again replaces earlier human points,
    so correcting a score is one more call.
    """
    try:
        document: dict[str, Any] = json.loads(Path(report_json).read_text(encoding="utf-8"))
        checklist = document["extra_data"]["human"]["checklist"]
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise HumanScoreError(f"{report_json}: not a kit report.json with extra_data.human ({exc})") from None
    items = {entry["id"]: entry for entry in checklist}
    by_text = {entry["item"]: entry for entry in checklist}
    resolved: dict[str, tuple[float, float]] = {}
    for key, value in scores.items():
        entry = items.get(key) or by_text.get(key)
        if entry is None:
            raise HumanScoreError(f"{report_json}: no checklist item {key!r} (ids: {', '.join(items) or 'none'})")
        if entry["id"] in resolved:
            raise HumanScoreError(f"{report_json}: checklist item {entry['id']} scored twice")
        resolved[entry["id"]] = _points(entry["id"], value)
    for entry in checklist:
        if entry["id"] in resolved:
            entry["score"], entry["max_score"] = resolved[entry["id"]]
    tests = [t for t in document["tests"] if "human" not in t.get("tags", [])]
    for entry in checklist:
        if entry["score"] is None:
            continue
        tests.append(
            {
                "name": f"{entry['id']}: {entry['item']}",
                "name_format": "text",
                "score": entry["score"],
                "max_score": entry["max_score"],
                "status": "passed" if entry["score"] >= entry["max_score"] else "failed",
                "visibility": "after_published",
                "output": f"Scored by a person: {fmt_points(entry['score'])} / {fmt_points(entry['max_score'])}.",
                "output_format": "text",
                "tags": ["human", "interview"] if entry["id"].startswith(INTERVIEW_PREFIX) else ["human"],
            }
        )
    document["tests"] = tests
    document["score"] = round(sum(t["score"] for t in tests), 6)
    document["max_score"] = round(sum(t["max_score"] for t in tests), 6)
    document["extra_data"]["human"]["applied"] = any(e["score"] is not None for e in checklist)
    write_document(report_json, document)
    refresh(Path(report_json))  # report.html shows the interview's points beside the automated score
    return document


def set_interview(report_json: Path, items: list[str], guide: str) -> dict[str, Any]:
    """Register an interview's scoring sheet (interview.1, ...) and its guide's path in `report_json`, in place.

    A sheet written again keeps the points of every item whose id and text are unchanged."""
    try:
        document: dict[str, Any] = json.loads(Path(report_json).read_text(encoding="utf-8"))
        human = document["extra_data"]["human"]
        checklist = human["checklist"]
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise HumanScoreError(f"{report_json}: not a kit report.json with extra_data.human ({exc})") from None
    before = {(e["id"], e["item"]): e for e in checklist if e["id"].startswith(INTERVIEW_PREFIX)}
    sheet = []
    for i, item in enumerate(items, start=1):
        kept = before.get((f"{INTERVIEW_PREFIX}{i}", clean(item)))
        sheet.append(
            {
                "id": f"{INTERVIEW_PREFIX}{i}",
                "item": clean(item),
                "score": kept["score"] if kept else None,
                "max_score": kept["max_score"] if kept else None,
            }
        )
    human["checklist"] = [e for e in checklist if not e["id"].startswith(INTERVIEW_PREFIX)] + sheet
    human["interview_guide"] = guide
    write_document(report_json, document)
    return apply_human_scores(report_json, {})


def person_part(report_json: Path) -> dict[str, Any] | None:
    """What a person added to a report.json (checklist points, the interview's sheet and guide), or None."""
    try:
        human = json.loads(Path(report_json).read_text(encoding="utf-8"))["extra_data"]["human"]
        checklist = [e for e in human["checklist"] if isinstance(e, dict) and isinstance(e.get("id"), str)]
    except (OSError, ValueError, KeyError, TypeError):
        return None
    return {"checklist": checklist, "interview_guide": human.get("interview_guide")}


def restore_person_part(report_json: Path, part: dict[str, Any] | None) -> None:
    """Put a person's part back into a report.json written again from the same records (a re-judge): the
    interview's sheet and guide, and every point whose item the new report still has."""
    if not part:
        return
    sheet = [e for e in part["checklist"] if e["id"].startswith(INTERVIEW_PREFIX)]
    if part.get("interview_guide"):
        set_interview(report_json, [e["item"] for e in sheet], str(part["interview_guide"]))
    current = json.loads(Path(report_json).read_text(encoding="utf-8"))["extra_data"]["human"]["checklist"]
    known = {e["id"] for e in current}
    scores = {e["id"]: (e["score"], e["max_score"]) for e in part["checklist"] if e.get("score") is not None}
    if scores := {k: v for k, v in scores.items() if k in known}:
        apply_human_scores(report_json, scores)
