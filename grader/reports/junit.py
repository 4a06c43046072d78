"""junit.xml: the grade in the JUnit XML format that CI servers and test dashboards read.

One <testsuite> per deliverable, one <testcase> per criterion (classname = deliverable,
name = criterion id, time = duration_s). A failed criterion carries <failure>, a skipped one
<skipped>.

An inconclusive criterion becomes <skipped message="inconclusive: ...">. JUnit has four outcomes
(pass, failure, error, skipped) and none means "a person must look". A <failure> would tell a
dashboard the candidate's code is wrong, which the grader could not establish; an <error> would
say the grader broke, which it did not. Skipped is the outcome that claims nothing, and the
"inconclusive:" prefix makes it stand out; it scores 0 in every format either way.

The grade's context (submission, seed, sandbox) goes into each suite's <properties>, and an
unsandboxed run (or one where a limit was not enforced) is announced in a comment before the root
and in the root's name.
"""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET

from grader.outcome import CriterionResult, Grade
from grader.reports.text import (
    awarded,
    by_deliverable,
    clean,
    fmt_points,
    fmt_seconds,
    sandbox_warning,
    summary_lines,
)

__all__ = ["to_junit"]

_MESSAGE_CHARS = 200


def _first_line(text: str) -> str:
    line = next((part.strip() for part in text.splitlines() if part.strip()), "")
    return line if len(line) <= _MESSAGE_CHARS else line[: _MESSAGE_CHARS - 1] + "…"


def _details(c: CriterionResult) -> str:
    parts = [clean(c.output)]
    if c.tolerance:
        parts.append(f"Tolerance: {clean(c.tolerance)}")
    parts.append(f"Score {fmt_points(awarded(c))} / {fmt_points(c.weight)}, attempts {c.attempts}.")
    return "\n".join(p for p in parts if p)


def _evidence(c: CriterionResult) -> str:
    e = c.evidence
    sections = [
        ("Scenario", c.scenario),
        ("What the grader sent", e.sent),
        ("What the candidate reported", e.reported),
        ("What the ledger shows", e.truth),
        ("Logs", e.logs),
    ]
    return "\n\n".join(f"{title}:\n{clean(text)}" for title, text in sections if text)


def _testcase(parent: ET.Element, c: CriterionResult) -> None:
    case = ET.SubElement(
        parent, "testcase", {"classname": clean(c.deliverable), "name": clean(c.id), "time": fmt_seconds(c.duration_s)}
    )
    if c.status == "failed":
        failure = ET.SubElement(
            case, "failure", {"message": _first_line(clean(c.output)) or "failed", "type": "failed"}
        )
        failure.text = _details(c)
    elif c.status == "skipped":
        skipped = ET.SubElement(case, "skipped", {"message": _first_line(clean(c.output)) or "skipped"})
        skipped.text = _details(c)
    elif c.status == "inconclusive":
        skipped = ET.SubElement(
            case, "skipped", {"message": f"inconclusive: {_first_line(clean(c.output)) or 'borderline after a rerun'}"}
        )
        skipped.text = _details(c)
    out = "\n\n".join(
        p
        for p in (
            f"{clean(c.title)}" + (" [hidden]" if c.visibility == "hidden" else ""),
            _details(c) if c.status == "passed" else "",
            _evidence(c),
        )
        if p
    )
    ET.SubElement(case, "system-out").text = out


def _counts(criteria: list[CriterionResult]) -> dict[str, str]:
    return {
        "tests": str(len(criteria)),
        "failures": str(sum(c.status == "failed" for c in criteria)),
        "errors": "0",
        "skipped": str(sum(c.status in ("skipped", "inconclusive") for c in criteria)),
        "time": fmt_seconds(sum(c.duration_s for c in criteria)),
    }


def to_junit(grade: Grade) -> str:
    """The junit.xml text for `grade` (UTF-8, with its declaration)."""
    name = f"grade of {clean(grade.submission)}"
    warning = sandbox_warning(grade)
    if warning:
        name = f"{warning.split(':', 1)[0].upper()} {name}"
    root = ET.Element("testsuites", {"name": name, **_counts(grade.criteria)})
    properties = {
        "submission": clean(grade.submission),
        "candidate": clean(grade.candidate or ""),
        "seed": str(grade.seed),
        "started": clean(grade.started),
        "rubric": clean(grade.rubric),
        "sandboxed": "true" if grade.sandboxed else "false",
        "sandbox_note": clean(grade.sandbox_note),
    }
    for deliverable, criteria in by_deliverable(grade).items():
        suite = ET.SubElement(root, "testsuite", {"name": clean(deliverable), **_counts(criteria)})
        props = ET.SubElement(suite, "properties")
        for key, value in properties.items():
            ET.SubElement(props, "property", {"name": key, "value": value})
        for c in criteria:
            _testcase(suite, c)
    ET.indent(root, space="  ")
    # A comment may not hold "--"; the summary is the grader's own text plus cleaned names.
    banner = re.sub("-(?=-)", "- ", "\n".join(summary_lines(grade)))
    body = ET.tostring(root, encoding="unicode")
    return f'<?xml version="1.0" encoding="UTF-8"?>\n<!-- {banner} -->\n{body}\n'
