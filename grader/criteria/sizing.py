"""Sizing criteria: the candidate's `sizing.command` on the seed's inputs and on sets it never saw.

Each set's one JSON object (running/sizing.py) is compared, field by field, with the contract's
arithmetic (`sizing_truth`) within the criterion's relative tolerance (counts exact), and so is the
base set's output with each of the criterion's inputs moved in turn (public values, run in every
check): an input the command ignores fails there even when no set happens to show it, and an output
that stays put while the arithmetic says it should move names the input ignored (a constant where an
input belongs). Two stated conventions are graded by what the output says: its own
default month (`inputs.hours_per_month`, when the flag was left out) and `units.memory: GiB`; each
is accepted with a note.
"""

from __future__ import annotations

import math
import re
from typing import Any

from grader.criteria.registry import check
from grader.criteria.sizing_truth import DEFAULTS, Conventions, expected
from grader.criteria.verdict import Verdict
from grader.outcome import Evidence
from grader.records.sizing import SizingRun, SizingRuns
from grader.rubric import Criterion
from grader.rubric.sizing_plan import argv

__all__ = ["GROUPS"]

_EXACT = {"replicas_for_load", "replicas", "sequences_at_context", "holds_concurrency"}

# Each criterion: the output fields it grades, and the inputs those fields depend on.
GROUPS: dict[str, tuple[tuple[str, ...], tuple[str, ...]]] = {
    "sizing.replicas": (
        ("peak_output_tokens_per_s", "replicas_for_load", "replicas"),
        (
            "throughput",
            "chats-per-day",
            "turns-per-chat",
            "output-tokens-per-turn",
            "active-hours",
            "peak-factor",
            "min-replicas",
        ),
    ),
    "sizing.cost-per-million": (
        ("cost_per_million_output_tokens",),
        ("gpu-hour-usd", "utilisation", "throughput", "gpus-per-replica"),
    ),
    "sizing.monthly": (
        ("monthly_cost", "cost_per_chat_usd", "chats_per_month"),
        ("gpu-hour-usd", "gpus-per-replica", "hours-per-month"),
    ),  # not via replicas: a floor masks it
    "sizing.api": (
        ("api",),
        (
            "api-input-usd-per-million",
            "api-output-usd-per-million",
            "input-tokens-per-turn",
            "output-tokens-per-turn",
            "turns-per-chat",
            "chats-per-day",
            "hours-per-month",
        ),
    ),
    "sizing.kv-cache": (
        ("kv_cache",),
        (
            "gpu-memory-gb",
            "gpu-memory-utilization",
            "weights-gb",
            "overhead-gb",
            "kv-bytes-per-token",
            "kv-cache-dtype",
            "context-tokens",
            "gpus-per-replica",
            "concurrency",
        ),
    ),
    "sizing.batch": (
        ("batch_hours", "per_stream_output_tokens_per_s"),
        ("batch-output-tokens", "throughput", "concurrency"),
    ),
}


# --- comparing one output with the arithmetic ------------------------------------------------------


def _key(row: dict[str, Any]) -> str:
    return ", ".join(f"{k}={v:g}" for k, v in row.items() if k != "usd")


def _leaves(value: Any, path: str) -> dict[str, Any]:
    """path -> leaf; rows of a table are addressed by their key columns, not their position."""
    if isinstance(value, dict):
        return {k: v for name, item in value.items() for k, v in _leaves(item, f"{path}.{name}").items()}
    if isinstance(value, list):
        return {f"{path}[{_key(row)}].usd": row.get("usd") for row in value if isinstance(row, dict)}
    return {path: value}


def _candidate_rows(value: Any, path: str) -> dict[str, Any]:
    if not isinstance(value, list):
        return _leaves(value, path)
    out = {}
    for row in value:
        if isinstance(row, dict) and all(isinstance(v, (int, float)) for v in row.values()):
            out[f"{path}[{_key(row)}].usd"] = row.get("usd")
    return out


def _close(got: Any, want: Any, name: str, rel: float) -> bool:
    if want is None or isinstance(want, bool) or name.rsplit(".", 1)[-1] in _EXACT:
        return bool(got == want and type(got) is type(want)) if isinstance(want, bool) else got == want
    if not isinstance(got, (int, float)) or isinstance(got, bool) or not math.isfinite(got):
        return False
    return bool(abs(got - want) <= rel * abs(want) + 1e-12)


def conventions_of(run: SizingRun) -> tuple[Conventions, list[str]]:
    """The conventions an output states, and a note for each one accepted."""
    out = run.output or {}
    notes, hours, gib = [], None, False
    stated = (out.get("inputs") or {}).get("hours_per_month") if isinstance(out.get("inputs"), dict) else None
    if (
        "hours-per-month" not in run.flags
        and isinstance(stated, (int, float))
        and stated != DEFAULTS["hours-per-month"]
    ):
        hours = float(stated)
        notes.append(
            f"set {run.name}: a {stated:g}-hour month, as the output's inputs state, accepted "
            f"(the contract's default is {DEFAULTS['hours-per-month']})"
        )
    if isinstance(out.get("units"), dict) and out["units"].get("memory") == "GiB":
        gib = True
        notes.append(f"set {run.name}: memory read as GiB (2^30 bytes), as the output's units state, accepted")
    return Conventions(hours, gib), notes


def compare(run: SizingRun, fields: tuple[str, ...], rel: float) -> tuple[list[list[Any]], list[str]]:
    """Evidence rows (set, field, expected, got, ok) and the notes of accepted conventions."""
    conventions, notes = conventions_of(run)
    want = expected(run.flags, conventions)
    rows = []
    for name in fields:
        expect = _leaves(want[name], name)
        got = _candidate_rows((run.output or {}).get(name), name)
        for path, value in expect.items():
            have = got.get(path, "(missing)")
            rows.append([run.name, path, value, have, _close(have, value, path, rel)])
    month_fields = {"monthly_cost", "cost_per_chat_usd", "chats_per_month", "api"}
    return rows, [
        n for n in notes if ("month" in n and month_fields & set(fields)) or ("GiB" in n and "kv_cache" in fields)
    ]


def _values(run: SizingRun, fields: tuple[str, ...]) -> list[tuple[str, Any]]:
    """The group's figures in order as (family, value), row keys left out, to see whether an output moved.

    A family is one output field; the two replica counts are one family, so a floor that holds
    `replicas` still while `replicas_for_load` moves does not read as an ignored input.
    """
    out: list[tuple[str, Any]] = []
    for name in fields:
        family = "replicas" if name in ("replicas", "replicas_for_load") else name
        value = (run.output or {}).get(name)
        for row in value if isinstance(value, list) else [value]:
            if isinstance(row, dict):
                out += [(family, v) for k, v in row.items() if k == "usd" or name in ("kv_cache", "api")]
            else:
                out.append((family, row))
    return out


def _ignored(runs: SizingRuns, criterion_id: str) -> list[str]:
    """Inputs the candidate ignores: the first output field the arithmetic moves (fields run upstream first)
    stays put wherever it should move. Later fields are not asked, so a replica floor downstream of an
    honest peak does not blame the load's inputs."""
    fields, deps = GROUPS[criterion_id]
    base = runs.base
    if base.output is None:
        return []
    ignored = []
    for flag in deps:
        moved = runs.extra.get(flag)
        if moved is None or moved.output is None:
            continue
        want_base = _values(SizingRun("", base.flags, expected(base.flags), ""), fields)
        want_moved = _values(SizingRun("", moved.flags, expected(moved.flags), ""), fields)
        got_base, got_moved = _values(base, fields), _values(moved, fields)
        if not (len(got_base) == len(got_moved) == len(want_base) == len(want_moved)):
            continue
        stuck: dict[str, bool] = {}
        for (family, wb), (_, wm), (_, gb), (_, gm) in zip(want_base, want_moved, got_base, got_moved, strict=True):
            if wb != wm:
                stuck[family] = stuck.get(family, True) and gb == gm
        first_moved: bool = next(iter(stuck.values()), False)  # the first field it moves, upstream of any floor
        if first_moved:
            ignored.append(f"--{flag}")
    return ignored


def judged_runs(runs: SizingRuns, criterion_id: str) -> list[SizingRun]:
    """The runs a criterion is judged on: every input set, and the base set with each of its inputs moved."""
    _, deps = GROUPS[criterion_id]
    return [*runs.runs, *(runs.extra[flag] for flag in deps if flag in runs.extra)]


@check("sizing", *GROUPS, needs=("rel",))
def check_group(runs: SizingRuns, criterion: Criterion) -> Verdict:
    fields, _ = GROUPS[criterion.id]
    rel = criterion.tol("rel")
    rows: list[list[Any]] = []
    notes: list[str] = []
    judged = judged_runs(runs, criterion.id)
    broken = [r for r in judged if r.output is None or r.problem]
    for run in judged:
        if run.output is not None and not run.problem:
            got_rows, got_notes = compare(run, fields, rel)
            rows += got_rows
            notes += got_notes
    wrong = [row for row in rows if not row[4]]
    evidence = Evidence(
        sent=f"{len(runs.runs)} input sets ({', '.join(r.name for r in runs.runs)}) and "
        f"{len(judged) - len(runs.runs)} with one input of {runs.perturb_base} moved",
        columns=["set", "field", "expected", "got", "ok"],
        rows=wrong[:40] + [r for r in rows if r[4]][:20],
        logs="\n".join(f"{r.name}: {r.problem}\n{r.stderr_tail}" for r in broken)[:4000],
    )
    if broken:
        return Verdict(
            False,
            "no output to compare on "
            + ", ".join(f"set {r.name} ({r.problem})" for r in broken)
            + (f"\nstderr tail: {broken[0].stderr_tail[-400:]}" if broken[0].stderr_tail else ""),
            evidence=evidence,
        )
    if not wrong:
        text = (
            f"every field matches the arithmetic within {rel * 100:g}% on {len(runs.runs)} input sets and "
            f"{len(judged) - len(runs.runs)} with one input moved"
        )
        return Verdict(True, "\n".join([text, *sorted(set(notes))]), evidence=evidence)
    ignored = _ignored(runs, criterion.id)
    lines = [f"{len(wrong)} of {len(rows)} figures differ from the arithmetic by more than {rel * 100:g}%"]
    if ignored:
        lines.append(
            f"the output does not move when {', '.join(ignored)} moves: a constant stands where an input belongs"
        )
    elif runs.base.output is not None and not any(f in runs.extra for f in GROUPS[criterion.id][1]):
        lines.append("(no run moving one input at a time was recorded for this criterion, so no input is named)")
    lines += [
        f"set {s}: {path}: expected {want:.6g}, got {got}"
        if isinstance(want, float)
        else f"set {s}: {path}: expected {want}, got {got}"
        for s, path, want, got, _ in wrong[:6]
    ]
    return Verdict(False, "\n".join(lines + sorted(set(notes))), evidence=evidence)


@check("sizing", "sizing.runs")
def check_runs(runs: SizingRuns, criterion: Criterion) -> Verdict:
    """Every set ran: exit 0 and one JSON object that follows the schema."""
    rows = [[r.name, " ".join(argv(r.flags))[:120], r.problem or "ok", f"{r.wall_s:.2f}"] for r in runs.runs]
    evidence = Evidence(
        columns=["set", "flags", "result", "seconds"],
        rows=rows,
        logs="\n".join(f"{r.name}: {r.stderr_tail}" for r in runs.runs if r.problem)[:4000],
    )
    broken = [r for r in runs.runs if r.problem]
    if not broken:
        return Verdict(
            True, f"the command printed a contract JSON object on all {len(runs.runs)} input sets", evidence=evidence
        )
    lines = [
        f"set {r.name}: {r.problem}" + (f"\n  stderr: {r.stderr_tail[-300:]}" if r.stderr_tail else "") for r in broken
    ]
    return Verdict(False, "\n".join(lines), evidence=evidence)


#: A traceback on stderr: Python's header line, or the last line of one (`ValueError: ...`; click's own `Error: ...`
#: message is not one).
_TRACEBACK = re.compile(r"Traceback \(most recent call last\)|^[A-Za-z_.]+(Error|Exception)(: |$)", re.MULTILINE)


def refusal_problem(run: SizingRun, flag: str) -> str | None:
    """Why a run on inputs the command must refuse is not a refusal: exit status 0 (or no exit: a hang), no
    message naming `flag` on stderr, or a traceback instead of a message. None when it refused as it must."""
    if run.exit_code is None:
        return run.problem or "did not exit"
    if run.exit_code == 0:
        return "exited 0: it accepted inputs it must refuse"
    named = {f"--{flag}", flag, flag.replace("-", "_")}
    if _TRACEBACK.search(run.stderr_tail):
        return f"exited {run.exit_code} with a traceback on stderr instead of a message"
    if not any(name in run.stderr_tail for name in named):
        said = run.stderr_tail.strip().splitlines()[-1][:120] if run.stderr_tail.strip() else "nothing"
        return f"exited {run.exit_code}, but stderr does not name --{flag} (it says: {said!r})"
    return None


@check("sizing", "sizing.refuses")
def check_refuses(runs: SizingRuns, criterion: Criterion) -> Verdict:
    """A missing required flag, and each kind of out-of-range value, is refused: a non-zero exit and a message
    on stderr that names the flag, never a traceback and never an answer."""
    rows, problems = [], []
    for run in runs.refusals:
        flag = _refused_flag(run.name)
        problem = refusal_problem(run, flag)
        rows.append([run.name, run.exit_code, problem or "refused, naming the flag", run.stderr_tail[-160:]])
        if problem:
            problems.append(f"{run.name}: {problem}")
    evidence = Evidence(
        sent=f"{len(runs.refusals)} inputs to refuse, each the base set {runs.perturb_base} with one flag left out or "
        "out of its range",
        columns=["inputs", "exit", "result", "stderr (tail)"],
        rows=rows,
    )
    if not runs.refusals:
        return Verdict(False, "nothing to judge: no run on inputs to refuse was recorded", evidence=evidence)
    if problems:
        return Verdict(False, "\n".join(problems[:8]), evidence=evidence)
    return Verdict(
        True, f"all {len(runs.refusals)} inputs refused, each with a message naming its flag", evidence=evidence
    )


def _refused_flag(name: str) -> str:
    """The flag a refusal run moved, from its name (`no --throughput` or `--utilisation [1.5]`)."""
    return name.removeprefix("no ").split()[0].removeprefix("--")
