"""Memo criteria: the honesty rules of grader/criteria/memo_rules.py as rubric lines, and the memo's figures
against what the submission itself produced.

Every finding quotes the memo's line. The figures are checked against two sources, got cheaply:
the load generator's results file the memo names (`loadgen_results`, read from the submission, not
rerun), and the sizing command run once, in a sandbox, on the memo's own `sizing_inputs`. A figure
citing a `sizing:` or `loadgen:` field (`derived_from`), or named like a sizing output field, must
match it within 0.5%. What a machine cannot judge goes to the person reading the report.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from grader.contract import Submission, schema_errors
from grader.criteria.memo_rules import (
    Finding,
    MemoError,
    check_memo,
    errors,
    split_front_matter,
)
from grader.criteria.verdict import Verdict
from grader.grading.outcome import Evidence
from grader.grading.rubric import Criterion

__all__ = ["CHECKS", "HUMAN_CHECKLIST", "MemoFacts", "read_memo"]

REL = 0.005
#: Which honesty rules each criterion is judged on.
RULES: dict[str, tuple[str, ...]] = {
    "memo.front-matter": ("front-matter", "figure-fields"),
    "memo.percentile-n": ("percentile-sample-size",),
    "memo.p99-max": ("p99-is-max",),
    "memo.production-provenance": ("production-provenance",),
    "memo.per-user-speed": ("per-user-not-aggregate", "speed-scope"),
    "memo.text-matches": ("text-matches-front-matter",),
}
#: Sizing output fields a figure may be named after (and is then compared with).
_NAMED = ("peak_output_tokens_per_s", "per_stream_output_tokens_per_s", "replicas_for_load", "replicas",
          "chats_per_month", "batch_hours")
_PATH = re.compile(r"([a-z_][a-z0-9_]*)|\[(\d+)\]")

HUMAN_CHECKLIST = [
    "Memo: is the recommendation (how many replicas, self-host or API) justified by the figures it shows?",
    "Memo: are the trades named (a second replica's idle GPU, FP8's accuracy risk, scale-down waits) and weighed?",
    "Memo: does it say what must be measured on the target GPU before anyone relies on it, and how?",
    "Memo: is it one page a hiring manager could act on, with the arithmetic easy to follow?",
]

SizingRunner = Callable[[dict[str, Any]], tuple[dict[str, Any] | None, str]]


@dataclass
class MemoFacts:
    """The memo read once: its findings, its front matter, and the figures checked against their sources."""

    path: Path
    problem: str = ""  # the memo could not be read at all
    findings: list[Finding] = field(default_factory=list)
    schema: list[str] = field(default_factory=list)
    source_rows: list[list[Any]] = field(default_factory=list)  # figure, source, memo value, source value, ok, line
    source_notes: list[str] = field(default_factory=list)


def _lookup(data: Any, path: str) -> Any:
    """A field by `a.b[0].c`; KeyError naming the part that is not there."""
    value = data
    for name, index in _PATH.findall(path):
        try:
            value = value[name] if name else value[int(index)]
        except (KeyError, IndexError, TypeError):
            raise KeyError(name or f"[{index}]") from None
    return value


def _line_of(text: str, name: str) -> tuple[int | None, str]:
    for i, line in enumerate(text.splitlines()):
        if re.search(rf"\bname:\s*['\"]?{re.escape(name)}\b", line):
            return i + 1, line.strip()
    return None, ""


def _loadgen_results(submission: Submission, front: dict[str, Any]) -> tuple[Any, str]:
    rel = front.get("loadgen_results")
    if not isinstance(rel, str):
        return None, "the front matter names no loadgen_results file"
    folder = submission.folder.resolve()
    path = (folder / rel).resolve()
    if folder not in path.parents or not path.is_file():
        return None, f"loadgen_results: {rel} is not a file inside the submission"
    try:
        return json.loads(path.read_text(encoding="utf-8")), ""
    except (OSError, ValueError) as exc:
        return None, f"loadgen_results: {rel} is not JSON ({exc})"


def _sources(submission: Submission, front: dict[str, Any], text: str, run_sizing: SizingRunner) -> MemoFacts:
    facts = MemoFacts(submission.path("memo"))
    figures = [f for f in front.get("figures") or [] if isinstance(f, dict)]
    cited = {f.get("name"): ([f["derived_from"]] if isinstance(f.get("derived_from"), str)
                             else list(f.get("derived_from") or [])) for f in figures}
    wants_sizing = any(s.startswith("sizing:") for refs in cited.values() for s in refs if isinstance(s, str)) or any(
        f.get("name") in _NAMED for f in figures)
    sizing, sizing_problem = None, ""
    if wants_sizing:
        if isinstance(front.get("sizing_inputs"), dict):
            sizing, sizing_problem = run_sizing(front["sizing_inputs"])
        else:
            sizing_problem = "the front matter states no sizing_inputs to rerun the sizing command with"
    results, results_problem = (None, "")
    if any(s.startswith("loadgen:") for refs in cited.values() for s in refs if isinstance(s, str)):
        results, results_problem = _loadgen_results(submission, front)
    for fig in figures:
        name = str(fig.get("name"))
        refs = [s for s in cited.get(fig.get("name"), []) if isinstance(s, str)]
        targets = [r for r in refs if r.startswith(("sizing:", "loadgen:"))]
        if not targets and name in _NAMED:
            targets = [f"sizing:{name}"]
        line, _ = _line_of(text, name)
        for ref in targets[:1] if len(targets) == 1 else []:
            kind, path = ref.split(":", 1)
            data, problem = (sizing, sizing_problem) if kind == "sizing" else (results, results_problem)
            if data is None:
                facts.source_rows.append([name, ref, fig.get("value"), f"(unavailable: {problem})", False, line])
                continue
            try:
                value = _lookup(data, path)
            except KeyError as exc:
                facts.source_rows.append([name, ref, fig.get("value"), f"(no field {exc})", False, line])
                continue
            mine = fig.get("value")
            ok = (isinstance(value, (int, float)) and isinstance(mine, (int, float))
                  and abs(mine - value) <= REL * abs(value) + 1e-12)
            facts.source_rows.append([name, ref, mine, value, ok, line])
    if not facts.source_rows:
        facts.source_notes.append("no figure cites a sizing: or loadgen: field, or is named like a sizing output")
    return facts


def read_memo(submission: Submission, run_sizing: SizingRunner) -> MemoFacts:
    """Everything the memo criteria need, from one read of the memo (and at most one sizing run)."""
    path = submission.path("memo")
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        return MemoFacts(path, problem=f"{path.name}: cannot read ({exc})")
    findings = errors(check_memo(text))
    try:
        front, _ = split_front_matter(text)
    except MemoError as exc:
        return MemoFacts(path, findings=findings, problem=str(exc))
    facts = _sources(submission, front, text, run_sizing)
    facts.findings = findings
    facts.schema = [f"{path.name}: front matter: {line}" for line in schema_errors("memo-front-matter", front)]
    return facts


def _quote(f: Finding) -> str:
    where = f"line {f.line}: " if f.line else ""
    return f"{where}{f.message}" + (f"\n    > {f.quote[:200]}" if f.quote else "")


def check_rules(facts: MemoFacts, criterion: Criterion) -> Verdict:
    rules = RULES[criterion.id]
    if facts.problem:
        return Verdict(False, f"the memo could not be read: {facts.problem}")
    hits = [f for f in facts.findings if f.rule in rules]
    lines = [_quote(f) for f in hits]
    if criterion.id == "memo.front-matter":
        lines = facts.schema + lines
    evidence = Evidence(columns=["rule", "figure", "line", "quote", "message"],
                        rows=[[f.rule, f.figure or "", f.line or "", f.quote[:160], f.message] for f in hits][:40])
    if lines:
        return Verdict(False, "\n".join(lines[:10]), evidence=evidence)
    return Verdict(True, f"no {' or '.join(rules)} finding in {facts.path.name}", evidence=evidence)


def check_sources(facts: MemoFacts, criterion: Criterion) -> Verdict:
    if facts.problem:
        return Verdict(False, f"the memo could not be read: {facts.problem}")
    wrong = [r for r in facts.source_rows if not r[4]]
    evidence = Evidence(columns=["figure", "source", "memo", "source value", "ok", "line"], rows=facts.source_rows)
    if wrong:
        return Verdict(False, "\n".join(
            f"line {r[5]}: figure {r[0]} = {r[2]} but {r[1]} is {r[3]}" for r in wrong[:10]), evidence=evidence)
    notes = facts.source_notes or [f"{len(facts.source_rows)} figures match their sources within {REL * 100:g}%"]
    return Verdict(True, "\n".join(notes), evidence=evidence)


CHECKS: dict[str, Callable[[MemoFacts, Criterion], Verdict]] = {
    **{cid: check_rules for cid in RULES}, "memo.matches-sources": check_sources}
