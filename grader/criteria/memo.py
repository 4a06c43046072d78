"""Memo criteria: the honesty rules of grader/criteria/memo_rules.py as rubric lines, and the memo's figures
against what the submission itself produced.

Every finding quotes the memo's line. The figures are checked against two sources (runs/memo.py):
the load generator's results file the memo names (`loadgen_results`, read from the submission, not
rerun), and the sizing command's output on the memo's own `sizing_inputs`. A figure citing a
`sizing:` or `loadgen:` field (`derived_from`), or named like a sizing output field, must match it
within the criterion's tolerance. What a machine cannot judge goes to the person reading the report.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from grader.contract import schema_errors
from grader.criteria.memo_rules import (
    Finding,
    MemoError,
    check_memo,
    errors,
    split_front_matter,
)
from grader.criteria.registry import check
from grader.criteria.verdict import Verdict
from grader.outcome import Evidence
from grader.records.memo import NAMED, MemoRun
from grader.rubric import Criterion

__all__ = ["HUMAN_CHECKLIST", "MemoFacts", "facts_of"]

#: Which honesty rules each criterion is judged on.
RULES: dict[str, tuple[str, ...]] = {
    "memo.front-matter": ("front-matter", "figure-fields"),
    "memo.percentile-n": ("percentile-sample-size",),
    "memo.p99-max": ("p99-is-max",),
    "memo.production-provenance": ("production-provenance",),
    "memo.per-user-speed": ("per-user-not-aggregate", "speed-scope"),
    "memo.text-matches": ("text-matches-front-matter",),
}
_PATH = re.compile(r"([a-z_][a-z0-9_]*)|\[(\d+)\]")

HUMAN_CHECKLIST = [
    "Memo: is the recommendation (how many replicas, self-host or API) justified by the figures it shows?",
    "Memo: are the trades named (a second replica's idle GPU, FP8's accuracy risk, scale-down waits) and weighed?",
    "Memo: does it say what must be measured on the target GPU before anyone relies on it, and how?",
    "Memo: is it one page a hiring manager could act on, with the arithmetic easy to follow?",
]


@dataclass
class MemoFacts:
    """The memo read once: its findings, its front matter, and the figures beside their sources."""

    memo_file: str
    problem: str = ""  # the memo could not be read at all
    findings: list[Finding] = field(default_factory=list)
    schema: list[str] = field(default_factory=list)
    source_rows: list[list[Any]] = field(default_factory=list)  # figure, source, memo value, source value, line
    source_notes: list[str] = field(default_factory=list)
    sizing_wall_s: float = 0.0  # how long the sizing command ran on the memo's inputs
    missing: list[str] = field(default_factory=list)  # what the task asks the memo to hold and it does not


def _refs(fig: dict[str, Any]) -> list[str]:
    derived = fig.get("derived_from")
    refs = [derived] if isinstance(derived, str) else list(derived or []) if isinstance(derived, list) else []
    return [r for r in refs if isinstance(r, str)] + ([f"sizing:{fig['name']}"] if fig.get("name") in NAMED else [])


_COST_ROW = re.compile(r"^sizing:cost_per_million_output_tokens\[(\d+)\]")


def missing_content(front: dict[str, Any], sizing_output: Any) -> list[str]:
    """What the task asks the memo to hold and its figures do not: the replicas for the load, the cost per million
    output tokens at two utilisations and the comparison with the API, each cited from the sizing command
    (`derived_from: sizing:...`). Honesty is judged only on a memo that holds them."""
    figures = [f for f in front.get("figures") or [] if isinstance(f, dict)]
    refs = [r for f in figures for r in _refs(f)]
    out = []
    if not any(r in ("sizing:replicas", "sizing:replicas_for_load") for r in refs):
        out.append("the replicas for the load (a figure derived from sizing:replicas)")
    rows = {int(m.group(1)) for r in refs if (m := _COST_ROW.match(r))}
    table = sizing_output.get("cost_per_million_output_tokens") if isinstance(sizing_output, dict) else None
    if isinstance(table, list):
        utilisations = {table[i].get("utilisation") for i in rows if i < len(table) and isinstance(table[i], dict)}
    else:
        utilisations = rows  # without the sizing output, distinct rows stand in for distinct utilisations
    if len(utilisations) < 2:
        out.append(
            "the cost per million output tokens at two utilisations (figures derived from "
            "sizing:cost_per_million_output_tokens[i].usd)"
        )
    if not any(r.startswith("sizing:api") for r in refs):
        out.append("the comparison with the API's price (a figure derived from sizing:api...)")
    return out


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


def _results(run: MemoRun) -> tuple[Any, str]:
    if run.results_text is None:
        return None, run.results_problem
    try:
        return json.loads(run.results_text), ""
    except ValueError as exc:
        return None, f"loadgen_results: {run.results_file} is not JSON ({exc})"


def _sources(run: MemoRun, front: dict[str, Any], facts: MemoFacts) -> None:
    figures = [f for f in front.get("figures") or [] if isinstance(f, dict)]
    cited = {
        f.get("name"): (
            [f["derived_from"]] if isinstance(f.get("derived_from"), str) else list(f.get("derived_from") or [])
        )
        for f in figures
    }
    results, results_problem = _results(run)
    text = run.text or ""
    for fig in figures:
        name = str(fig.get("name"))
        refs = [s for s in cited.get(fig.get("name"), []) if isinstance(s, str)]
        targets = [r for r in refs if r.startswith(("sizing:", "loadgen:"))]
        if not targets and name in NAMED:
            targets = [f"sizing:{name}"]
        line, _ = _line_of(text, name)
        for ref in targets[:1] if len(targets) == 1 else []:
            kind, path = ref.split(":", 1)
            data, problem = (run.sizing_output, run.sizing_problem) if kind == "sizing" else (results, results_problem)
            if data is None:
                facts.source_rows.append([name, ref, fig.get("value"), f"(unavailable: {problem})", line])
                continue
            try:
                value = _lookup(data, path)
            except KeyError as exc:
                facts.source_rows.append([name, ref, fig.get("value"), f"(no field {exc})", line])
                continue
            facts.source_rows.append([name, ref, fig.get("value"), value, line])
    if not facts.source_rows:
        facts.source_notes.append("no figure cites a sizing: or loadgen: field, or is named like a sizing output")


def facts_of(run: MemoRun) -> MemoFacts:
    """Everything the memo criteria need, from the memo's run record."""
    facts = MemoFacts(run.memo_file, sizing_wall_s=run.sizing_wall_s)
    if run.text is None:
        facts.problem = run.problem
        return facts
    facts.findings = errors(check_memo(run.text))
    try:
        front, _, _ = split_front_matter(run.text, Path(run.memo_file).name)
    except MemoError as exc:
        facts.problem = str(exc)
        return facts
    _sources(run, front, facts)
    facts.schema = [
        f"{Path(run.memo_file).name}: front matter: {line}" for line in schema_errors("memo-front-matter", front)
    ]
    facts.missing = missing_content(front, run.sizing_output)
    return facts


def _unjudgeable(facts: MemoFacts) -> Verdict | None:
    """A fail when there is nothing to judge: a memo that cannot be read, or one without what the task asks for
    (a rule that holds on a memo with no figures earns nothing)."""
    if facts.problem:
        return Verdict(False, f"the memo could not be read: {facts.problem}")
    if facts.missing:
        return Verdict(
            False,
            "the memo does not hold what the task asks for, so there is nothing to judge: it has no "
            + "; no ".join(facts.missing),
        )
    return None


def _quote(f: Finding) -> str:
    where = f"line {f.line}: " if f.line else ""
    return f"{where}{f.message}" + (f"\n    > {f.quote[:200]}" if f.quote else "")


@check("memo", *RULES)
def check_rules(facts: MemoFacts, criterion: Criterion) -> Verdict:
    rules = RULES[criterion.id]
    if criterion.id == "memo.front-matter" and facts.schema:
        return Verdict(False, "\n".join(facts.schema[:10]))
    if (bad := _unjudgeable(facts)) is not None:
        return bad
    hits = [f for f in facts.findings if f.rule in rules]
    lines = [_quote(f) for f in hits]
    if criterion.id == "memo.front-matter":
        lines = facts.schema + lines
    evidence = Evidence(
        columns=["rule", "figure", "line", "quote", "message"],
        rows=[[f.rule, f.figure or "", f.line or "", f.quote[:160], f.message] for f in hits][:40],
    )
    if lines:
        return Verdict(False, "\n".join(lines[:10]), evidence=evidence)
    return Verdict(True, f"no {' or '.join(rules)} finding in {Path(facts.memo_file).name}", evidence=evidence)


def _agrees(mine: Any, value: Any, rel: float) -> bool:
    numbers = all(isinstance(v, int | float) and not isinstance(v, bool) for v in (mine, value))
    return numbers and abs(mine - value) <= rel * abs(value) + 1e-12


@check("memo", "memo.matches-sources", needs=("rel",))
def check_sources(facts: MemoFacts, criterion: Criterion) -> Verdict:
    if (bad := _unjudgeable(facts)) is not None:
        return bad
    rel = criterion.tol("rel")
    rows = [
        [name, ref, mine, value, _agrees(mine, value, rel), line] for name, ref, mine, value, line in facts.source_rows
    ]
    wrong = [r for r in rows if not r[4]]
    evidence = Evidence(columns=["figure", "source", "memo", "source value", "ok", "line"], rows=rows)
    if wrong:
        return Verdict(
            False,
            "\n".join(f"line {r[5]}: figure {r[0]} = {r[2]} but {r[1]} is {r[3]}" for r in wrong[:10]),
            evidence=evidence,
        )
    notes = facts.source_notes or [f"{len(rows)} figures match their sources within {rel * 100:g}%"]
    return Verdict(True, "\n".join(notes), evidence=evidence)
