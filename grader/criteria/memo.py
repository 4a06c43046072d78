"""Memo criteria: the honesty rules of grader/criteria/memo_rules.py as rubric lines, the memo's own measurements
(memo_measured.py), and the memo's figures against what the submission itself produced.

Every finding quotes the memo's line. The figures are checked against two sources (running/memo.py):
the load generator's results file the memo names (`loadgen_results`, read from the submission, not
rerun), and the sizing command's output on the memo's own `sizing_inputs`. A figure citing a
`sizing:` or `loadgen:` field (`derived_from`), or named like a sizing output field, must match it
within the criterion's tolerance. What a machine cannot judge goes to the person reading the report.

No rule passes on nothing: a rule whose memo holds nothing it reads (no percentile for the percentile rules,
no figure for the throughput the sizing ran with, no speed, no number in the text, no figure citing a source)
fails, saying "nothing to judge". The percentile rules read how many percentiles they need from the rubric
(`percentiles_needed_count`): a brief that asks for none grades with 0.
"""

from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from grader.contract import schema_errors
from grader.criteria.memo_figures import is_token_rate
from grader.criteria.memo_measured import Measured, judge_measured
from grader.criteria.memo_prose import numbers_read, percentiles_quoted
from grader.criteria.memo_rules import (
    BrokenRule,
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
#: The rules that judge a memo's percentiles: nothing to judge below `percentiles_needed_count` of them.
PERCENTILE_RULES = ("memo.percentile-n", "memo.p99-max")
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
    findings: list[BrokenRule] = field(default_factory=list)
    schema: list[str] = field(default_factory=list)
    source_rows: list[list[Any]] = field(default_factory=list)  # figure, source, memo value, source value, line
    sizing_wall_s: float = 0.0  # how long the sizing command ran on the memo's inputs
    missing: list[str] = field(default_factory=list)  # what the task asks the memo to hold and it does not
    nothing: dict[str, str] = field(default_factory=dict)  # criterion id -> what it has nothing of to judge
    percentiles: int = 0  # percentiles the memo quotes: figures with `percentile`, sentences with a p50 to p99
    measured: Measured = field(default_factory=Measured)
    text: str = ""  # the memo as read, to quote the line of a figure


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
        out.append("the replicas for the load (a figure derived from sizing:replicas or sizing:replicas_for_load)")
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


def facts_of(run: MemoRun) -> MemoFacts:
    """Everything the memo criteria need, from the memo's run record."""
    facts = MemoFacts(run.memo_file, sizing_wall_s=run.sizing_wall_s, text=run.text or "")
    if run.text is None:
        facts.problem = run.problem
        return facts
    facts.findings = errors(check_memo(run.text))
    try:
        front, body, first_line = split_front_matter(run.text, Path(run.memo_file).name)
    except MemoError as exc:
        facts.problem = str(exc)
        return facts
    _sources(run, front, facts)
    figures = [f for f in front.get("figures") or [] if isinstance(f, dict)]
    facts.percentiles = sum(1 for f in figures if f.get("percentile") is not None) + len(
        percentiles_quoted(body, first_line)
    )
    facts.nothing = _nothing(front, figures, body, first_line, facts)
    results, results_problem = _results(run)
    facts.measured = judge_measured(front, body, first_line, results, results_problem)
    facts.schema = [
        f"{Path(run.memo_file).name}: front matter: {line}" for line in schema_errors("memo-front-matter", front)
    ]
    facts.missing = missing_content(front, run.sizing_output)
    return facts


def _nothing(
    front: dict[str, Any], figures: list[dict[str, Any]], body: str, first_line: int, facts: MemoFacts
) -> dict[str, str]:
    """What each rule would pass on without having judged anything, by criterion id."""
    out = {}
    inputs = front.get("sizing_inputs") if isinstance(front.get("sizing_inputs"), dict) else {}
    throughput = inputs.get("throughput") if isinstance(inputs, dict) else None
    speeds = [f for f in figures if is_token_rate(f)]
    if not isinstance(throughput, int | float) or isinstance(throughput, bool):
        out["memo.production-provenance"] = "sizing_inputs give no throughput for the sizing to rest on"
    elif not any(isinstance(f.get("value"), int | float) and math.isclose(f["value"], throughput) for f in speeds):
        out["memo.production-provenance"] = (
            f"no figure of the front matter is the throughput the sizing ran with ({throughput:g} tokens/s), so "
            "where it came from is never said"
        )
    if not speeds:
        out["memo.per-user-speed"] = "the front matter states no speed (a figure in tokens/s)"
    if numbers_read(body, first_line) == 0:
        out["memo.text-matches"] = (
            "the text quotes no speed, latency, cost or price, replica count, hour count or token count"
        )
    if not facts.source_rows:
        out["memo.matches-sources"] = "no figure cites a sizing: or loadgen: field, or is named like a sizing output"
    return out


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


def _quote(f: BrokenRule) -> str:
    where = f"line {f.line}: " if f.line else ""
    return f"{where}{f.message}" + (f"\n    > {f.quote[:200]}" if f.quote else "")


def _nothing_quoted(facts: MemoFacts, criterion: Criterion) -> Verdict | None:
    """A fail when the rule has nothing of the memo's to judge; for the percentile rules, fewer percentiles than
    the rubric needs (`percentiles_needed_count`; 0 lets a memo quoting none pass, for a brief that asks none)."""
    if criterion.id in PERCENTILE_RULES:
        needed = criterion.tol("percentiles_needed_count")
        if facts.percentiles < needed:
            return Verdict(
                False,
                f"nothing to judge: the memo quotes {facts.percentiles or 'no'} percentile(s) (a figure with "
                f"percentile: and sample_size:, or a p50, p90 or p99 in its text); this rubric needs {needed:g}",
            )
        return None
    if criterion.id in facts.nothing:
        return Verdict(False, f"nothing to judge: {facts.nothing[criterion.id]}")
    return None


@check("memo", *(r for r in RULES if r not in PERCENTILE_RULES))
def check_rules(facts: MemoFacts, criterion: Criterion) -> Verdict:
    rules = RULES[criterion.id]
    if criterion.id == "memo.front-matter" and facts.schema:
        return Verdict(False, "\n".join(facts.schema[:10]))
    if (bad := _unjudgeable(facts) or _nothing_quoted(facts, criterion)) is not None:
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


# The percentile rules judge the same way, and read from the rubric how many percentiles a memo must quote.
check("memo", *PERCENTILE_RULES, needs=("percentiles_needed_count",))(check_rules)


def _agrees(mine: Any, value: Any, rel: float) -> bool:
    numbers = all(isinstance(v, int | float) and not isinstance(v, bool) for v in (mine, value))
    return numbers and abs(mine - value) <= rel * abs(value) + 1e-12


@check("memo", "memo.matches-sources", needs=("rel",))
def check_sources(facts: MemoFacts, criterion: Criterion) -> Verdict:
    if (bad := _unjudgeable(facts) or _nothing_quoted(facts, criterion)) is not None:
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
    return Verdict(True, f"{len(rows)} figures match their sources within {rel * 100:g}%", evidence=evidence)


@check("memo", "memo.measured")
def check_measured(facts: MemoFacts, criterion: Criterion) -> Verdict:
    """The memo quotes its own TTFT p50 and p90, each with its n, and its throughput, from its results file."""
    if (bad := _unjudgeable(facts)) is not None:
        return bad
    found = facts.measured
    evidence = Evidence(columns=["measurement", "figure", "memo", "results file", "ok"], rows=found.rows)
    if found.no_results:
        quoted = f"; and it quotes no {'; no '.join(found.missing)}" if found.missing else ""
        return Verdict(False, f"nothing to judge: {found.no_results}{quoted}", evidence=evidence)
    if found.missing and not found.rows:
        return Verdict(False, "nothing to judge: the memo quotes no " + "; no ".join(found.missing), evidence=evidence)
    lines = []
    for name, why in found.wrong:
        line, quote = _line_of(facts.text, name)
        lines.append(f"line {line}: {why}\n    > {quote[:200]}" if line else why)
    lines += [f"the memo quotes no {what}" for what in found.missing]
    if lines:
        return Verdict(False, "\n".join(lines[:10]), evidence=evidence)
    return Verdict(
        True, f"the memo quotes its own {len(found.rows)} measurements, as its results file has them", evidence=evidence
    )
