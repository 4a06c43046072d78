"""Determinism: the same submission graded again gives the same scores and the same report, apart
from what is measured.

What may differ between two grades (and is masked before comparing):
- timestamps: `started`, and the "started ..." in the summary line;
- measured durations: `execution_time`, every `duration_s`, each section's shared time (`section_s`), `inherent_s` (how long the candidate's own
  commands ran), and every decimal figure in outputs and
  evidence (TTFT, TPS, wall times, the "worst X of the tolerance" margin), which are clock readings;
- `attempts`, `rerun`, `margin`, `busy` and `closest`: a timing check's margin is measured, and it is rerun
  when that margin is borderline or the machine was too busy to keep time, which depends on the
  machine's load, not on the submission; which request or check came closest to its limit is the
  one whose measured margin was largest, so on a loaded machine it can be another;
- the `Replay:` line of a Gradescope test's output: a pass gets one when its measured margin came near its
  limit (a near miss), which is the margin again;
- loopback ports (`127.0.0.1:PORT`): the fake servers bind a free port;
- in an evidence row quoting the start of a gateway's answer (`ends '...'`, cut at 70 characters),
  the rest of the quote after its first figure (a figure one digit wider moves the cut), and the
  `id` the gateway gave its answer (the submission's own, e.g. a random uuid);
- the evidence's `logs`: the candidate's own output, which prints its own clock readings and
  interleaves its threads' log lines in whatever order they ran;
- the order of evidence rows, and the client's own request number (`#`): which of a client's
  concurrent requests reaches the server first is a race, so the same response ids (and the same
  outcomes, which follow the server's request numbers) may pair with other client numbers;
- how often an identical evidence row repeats: a gateway case that polls until the gateway has
  recovered sends as many requests as its time allows, so rows are compared as a set; and in that
  case (`recover`), the 503s answered before the one that served: how many there were, none
  included, is the recovery time counted in polls (the probe may ask between the fault's end and
  the first poll).
Everything else must be identical: every status, score, count, reason, response id and log line.

CI grades the reference twice on a subset (one or two criteria of every deliverable but the
candidate's tests, whose suite alone takes ~15 s a run) and two chaff twice each. `make hostile-full`
(HOSTILE_FULL=1) grades the reference and both chaff five times on every criterion.
"""

from __future__ import annotations

import json
import os
import re
import sys
from pathlib import Path
from typing import Any

import pytest
from kit_paths import TESTS

sys.path.insert(0, str(TESTS / "hostile"))
from hostile_grading import ROOT, grade

from grader.kit.chaff import materialize

pytestmark = pytest.mark.slow

FULL = os.environ.get("HOSTILE_FULL") == "1"
SUBSET = ("loadgen.ttft", "loadgen.cut", "gateway.starts", "manifests.gpu-request", "sizing.replicas", "memo.p99-max")
CHAFF = {  # name -> its CI subset: a target it loses and a criterion it keeps
    "ttft-from-headers": ("loadgen.ttft", "loadgen.cut"),
    "manifests-no-gpu": ("manifests.gpu-request", "manifests.readiness-probe", "sizing.replicas"),
}
MEASURED_KEYS = {
    "execution_time",
    "duration_s",
    "section_s",
    "inherent_s",
    "started",
    "attempts",
    "rerun",
    "margin",
    "busy",
    "closest",
}
_DECIMAL = re.compile(r"\d+\.\d+")
_WITH_UNIT = re.compile(r"[-+]?\d+(\.\d+)? ?(ms|s|tok/s|tokens/s)\b")  # "-413 ms": a clock reading in prose
# A gateway answer's quoted tail is its first 70 characters: a figure one digit wider moves the cut.
_QUOTED_TAIL = re.compile(r"(ends '[^'#]*#)[^']*'")
_ANSWER_ID = re.compile(r"(ends '\{\"id\": \")[^\"]*")  # the id a gateway gave its own answer
_NUMBER = re.compile(r"\d+(\.\d+)?")
# An evidence column of clock readings (its figures may print without a decimal point, e.g. TPS 46).
_MEASURED_COLUMN = re.compile(r"TTFT|TPS|\bs\b|\(s\)|\bms\b|latency|wall", re.IGNORECASE)
_PORT = re.compile(r"127\.0\.0\.1:\d+")
_REPLAY_LINE = re.compile(r"\nReplay: grader replay [^\n]*")
_STAMP = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?([+-]\d\d:\d\d|Z)?")


def _mask_cell(cell: Any) -> Any:
    if isinstance(cell, bool):
        return cell
    if isinstance(cell, (int, float)):
        return "#"
    return _NUMBER.sub("#", cell) if isinstance(cell, str) else cell


def normalise(value: Any) -> Any:
    """The report with its timestamps, measured durations and ports masked (see the module docstring)."""
    if isinstance(value, dict):
        out = {k: normalise(v) for k, v in value.items() if k not in MEASURED_KEYS}
        out.pop("logs", None)  # the candidate's own output: its clock readings, its threads' interleaving
        if isinstance(out.get("rows"), list):
            columns = value.get("columns") or []
            timed = [i for i, c in enumerate(columns) if isinstance(c, str) and _MEASURED_COLUMN.search(c)]
            rows = [[_mask_cell(cell) if i in timed else cell for i, cell in enumerate(row)] for row in out["rows"]]
            numbered = columns[:1] == ["#"]
            rows = [
                [
                    _QUOTED_TAIL.sub(r"\1...'", _ANSWER_ID.sub(r"\1ID", cell)) if isinstance(cell, str) else cell
                    for cell in row
                ]
                for row in rows
            ]
            rows = _without_polls_before_recovery(rows)
            distinct = {json.dumps(row[1:] if numbered else row) for row in rows}
            out["rows"] = [json.loads(row) for row in sorted(distinct)]
        return out
    if isinstance(value, list):
        return [normalise(v) for v in value]
    if isinstance(value, str):
        value = _REPLAY_LINE.sub("", value)
        return _DECIMAL.sub("#", _WITH_UNIT.sub(r"# \2", _PORT.sub("LOOPBACK:PORT", _STAMP.sub("TIME", value))))
    return value


def _without_polls_before_recovery(rows: list[list[Any]]) -> list[list[Any]]:
    """The `recover` case's answers other than 200, when one 200 came: the polls before recovery."""
    answers = [row for row in rows if row[:1] == ["recover"] and len(row) == 4 and row[2] == "gateway -> client"]
    if not any(str(row[3]).startswith("HTTP 200 ") for row in answers):
        return rows
    return [row for row in rows if not (row in answers and not str(row[3]).startswith("HTTP 200 "))]


def _scores(report: dict[str, Any]) -> dict[str, tuple[str, float]]:
    return {c["id"]: (c["status"], c["score"]) for c in report["extra_data"]["kit"]["criteria"]}


def _withheld(report: dict[str, Any]) -> set[str]:
    """The criteria a busy machine left inconclusive: a verdict withheld for a person, not another verdict (a
    pass in one grade and a fail in another still differs; tests/rooms/grading/test_loaded_machine.py holds
    what a busy machine may do)."""
    return {c["id"] for c in report["extra_data"]["kit"]["criteria"] if c["status"] == "inconclusive" and c.get("busy")}


def _without(report: dict[str, Any], ids: set[str]) -> dict[str, Any]:
    kit = report["extra_data"]["kit"]
    criteria = [c for c in kit["criteria"] if c["id"] not in ids]
    tests = [t for t in report["tests"] if t.get("extra_data", {}).get("id") not in ids]
    return {
        **report,
        "tests": tests,
        "extra_data": {**report["extra_data"], "kit": {**kit, "criteria": criteria}},
        "score": None,
        "output": None,
    }


def _grade_times(submission: Path, only: tuple[str, ...], times: int, tmp_path: Path) -> list[dict[str, Any]]:
    reports = []
    for i in range(times):
        graded = grade(submission, tmp_path / f"out-{i}", only=only, tmpdir=tmp_path / f"tmp-{i}", timeout_s=900)
        assert graded.exit_code == 0 and graded.report is not None, graded.stderr[-2000:]
        reports.append(graded.report)
    return reports


def _differences(a: Any, b: Any, path: str = "") -> list[str]:
    """Where two normalised reports differ, as paths with both values (the first few)."""
    if isinstance(a, dict) and isinstance(b, dict):
        return [d for k in sorted(set(a) | set(b)) for d in _differences(a.get(k), b.get(k), f"{path}.{k}")][:5]
    if isinstance(a, list) and isinstance(b, list) and len(a) == len(b):
        return [d for i, (x, y) in enumerate(zip(a, b, strict=True)) for d in _differences(x, y, f"{path}[{i}]")][:5]
    if isinstance(a, list) and isinstance(b, list):  # evidence rows, compared as a set: name what only one has
        only_a = [x for x in a if x not in b][:3]
        only_b = [y for y in b if y not in a][:3]
        return [f"{path}: only in the first {str(only_a)[:600]}; only in the other {str(only_b)[:600]}"]
    if a == b:
        return []
    if isinstance(a, str) and isinstance(b, str):  # where they part, with some of what comes before
        at = next((i for i, (x, y) in enumerate(zip(a, b)) if x != y), min(len(a), len(b)))
        return [f"{path} from character {at}: {a[max(0, at - 80) : at + 220]!r} != {b[max(0, at - 80) : at + 220]!r}"]
    return [f"{path}: {str(a)[:300]!r} != {str(b)[:300]!r}"]


def _assert_identical(reports: list[dict[str, Any]]) -> None:
    for i, other in enumerate(reports[1:], start=2):
        withheld = _withheld(reports[0]) | _withheld(other)
        if withheld:
            print(f"grade {i}: left out as a busy machine's inconclusive: {sorted(withheld)}")
        first, other = (_without(r, withheld) if withheld else r for r in (reports[0], other))
        assert _scores(other) == _scores(first), f"grade {i} scored differently"
        assert other["score"] == first["score"]
        assert normalise(other) == normalise(first), (
            f"grade {i}'s report differs beyond what is measured: "
            + "; ".join(_differences(normalise(first), normalise(other)))
        )


@pytest.mark.rotating(93)
def test_the_reference_grades_identically_every_time(tmp_path: Path) -> None:
    reports = _grade_times(ROOT / "submissions" / "reference", () if FULL else SUBSET, 5 if FULL else 2, tmp_path)
    for report in reports:
        criteria = report["extra_data"]["kit"]["criteria"]
        failed = {
            c["id"]: c["output"][:600] for c in criteria if c["status"] != "passed" and c["id"] not in _withheld(report)
        }
        assert not failed, failed
        assert len(_withheld(report)) < len(criteria), "every criterion withheld: nothing was compared"
    _assert_identical(reports)


@pytest.mark.sampled(1)  # a sample each run (tests/sampling.py)
@pytest.mark.rotating(40)
@pytest.mark.parametrize("name", list(CHAFF))
def test_a_chaff_grades_identically(name: str, tmp_path: Path) -> None:
    folder = materialize(ROOT / "submissions" / "chaff" / name, tmp_path / name)
    reports = _grade_times(folder, () if FULL else CHAFF[name], 5 if FULL else 2, tmp_path)
    statuses = {status for status, _ in _scores(reports[0]).values()}
    assert statuses >= {"passed", "failed"}, "the subset should show both a lost target and a kept criterion"
    _assert_identical(reports)


def test_the_mask_hides_only_what_is_measured() -> None:
    rows = {"columns": ["#", "id", "outcome"], "rows": [[1, "chatcmpl-b", "ok"], [2, "chatcmpl-a", "failed"]]}
    swapped: dict[str, Any] = {
        "columns": ["#", "id", "outcome"],
        "rows": [[1, "chatcmpl-a", "failed"], [2, "chatcmpl-b", "ok"]],
    }
    assert normalise(rows) == normalise(swapped)
    cut = {"columns": ["case", "what"], "rows": [["c", 'HTTP 200; ends \'{"age_s":0.51,"x":1\'']]}
    wider = {"columns": ["case", "what"], "rows": [["c", 'HTTP 200; ends \'{"age_s":10.51,"x":\'']]}
    assert normalise(cut) == normalise(wider)
    swapped["rows"][0][2] = "ok"
    assert normalise(rows) != normalise(swapped)
    poll, served = "HTTP 503 route=none attempts=''", "HTTP 200 route=local attempts='local'"
    recovered = {
        "columns": ["case", "at (s)", "who", "what"],
        "rows": [["recover", 0.01, "gateway -> client", poll], ["recover", 0.3, "gateway -> client", served]],
    }
    at_once = {"columns": recovered["columns"], "rows": [["recover", 0.01, "gateway -> client", served]]}
    never = {"columns": recovered["columns"], "rows": [["recover", 0.01, "gateway -> client", poll]]}
    assert normalise(recovered) == normalise(at_once)
    assert normalise(never) != normalise(at_once)
    report = {
        "execution_time": 1.5,
        "score": 3.0,
        "tests": [{"output": "worst 0.25 of the tolerance at 127.0.0.1:4242", "status": "passed", "attempts": 2}],
        "extra_data": {"started": "2026-01-01T00:00:00+00:00", "note": "16 requests, 4 cut, -413 ms"},
    }
    assert normalise(report) == {
        "score": 3.0,
        "tests": [{"output": "worst # of the tolerance at LOOPBACK:PORT", "status": "passed"}],
        "extra_data": {"note": "16 requests, 4 cut, # ms"},
    }
    changed = json.loads(json.dumps(report))
    changed["tests"][0]["status"] = "failed"
    assert normalise(changed) != normalise(report)
