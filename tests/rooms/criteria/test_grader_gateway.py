"""The gateway criteria against real gateways: the reference passes, known-bad variants fail, in a real sandbox.

Each test starts the reference (or a chaff built from it) in the sandbox between a real local and
a real API fake server, runs a few of the grader's cases, and checks the verdicts. The cases are
the grader's own, so what is tested here is what a grade does.
"""

from __future__ import annotations

import dataclasses
import shutil
import time
from pathlib import Path

import pytest
from kit_paths import ROOT

from grader.contract import Submission, load_submission
from grader.criteria.catalog import registered
from grader.criteria.gateway.answers import answer_header
from grader.criteria.verdict import Verdict
from grader.kit.chaff import list_chaff, materialize
from grader.records.gateway import GatewayRun
from grader.rubric import load_rubric
from grader.running.gateway import HangBudget, run_gateway
from grader.sandbox import Sandbox, SandboxError

pytestmark = pytest.mark.slow

REFERENCE = ROOT / "submissions" / "reference"
CHAFF = ROOT / "submissions" / "chaff"
RUBRIC = load_rubric()
PLAN = RUBRIC.gateway


def _hang() -> HangBudget:
    limits = RUBRIC.limits["gateway"]
    return HangBudget(limits["request_s"], limits["budget_s"])


def _cases_of(criteria: tuple[str, ...]) -> set[str]:
    return {n for c in criteria for n in RUBRIC.criterion(c).cases}


def _run(folder: Path, criteria: tuple[str, ...]) -> GatewayRun:
    names = _cases_of(criteria)
    cases = tuple(c for c in PLAN.cases if c.name in names or c.kind == "startup")
    submission = load_submission(folder)
    with Sandbox(folder) as box:
        return GatewayRun.from_record(run_gateway(box, submission, PLAN, seed=3, hang=_hang(), cases=cases).to_record())


def _chaff(name: str, tmp_path: Path) -> Path:
    found = [c for c in list_chaff(CHAFF) if c.name == name]
    assert found, f"no chaff named {name}"
    return materialize(found[0].path, tmp_path)


def _verdicts(run: GatewayRun, criteria: tuple[str, ...]) -> dict[str, Verdict]:
    checks = registered()
    return {c: checks[c].judge(run, RUBRIC.criterion(c)) for c in criteria}


ROUTING = (
    "gateway.starts",
    "gateway.no-fallback-4xx",
    "gateway.committed-stream",
    "gateway.context-check",
    "gateway.require-field",
    "gateway.fallback-5xx",
)


def test_reference_passes_routing_criteria_from_the_ledgers() -> None:
    run = _run(REFERENCE, ROUTING)
    assert run.started, run.start_problem
    verdicts = _verdicts(run, ROUTING)
    assert {c: v.passed for c, v in verdicts.items()} == dict.fromkeys(ROUTING, True), {
        c: v.output for c, v in verdicts.items() if not v.passed
    }
    # the truth came from the ledgers: a 404 was answered by the local server and never reached the API
    four_oh_four = run.cases["local-404"]
    assert [r["status"] for r in four_oh_four.local] == [404] and four_oh_four.api == []
    # and a 500 reached both, in that order
    fallback = run.cases["local-500"]
    assert [r["status"] for r in fallback.local] == [500] and [r["status"] for r in fallback.api] == [200]
    assert fallback.local[0]["arrival"] < fallback.api[0]["arrival"]
    # the evidence is a timeline: the client's request, both ledgers' rows, the answer
    rows = verdicts["gateway.fallback-5xx"].evidence.rows
    assert {row[2] for row in rows if row[0] == "local-500"} == {
        "client -> gateway",
        "local ledger",
        "api ledger",
        "gateway -> client",
    }


def test_chaff_that_falls_back_on_404_loses_the_4xx_criterion_only(tmp_path: Path) -> None:
    criteria = ("gateway.no-fallback-4xx", "gateway.committed-stream")
    run = _run(_chaff("gateway-fallback-on-404", tmp_path), criteria)
    verdicts = _verdicts(run, criteria)
    assert not verdicts["gateway.no-fallback-4xx"].passed
    assert "local-404: " in verdicts["gateway.no-fallback-4xx"].output
    assert "API ledger shows 1 request" in verdicts["gateway.no-fallback-4xx"].output
    assert "local-400" not in verdicts["gateway.no-fallback-4xx"].output  # 400 and 429 are still passed through
    assert verdicts["gateway.committed-stream"].passed, verdicts["gateway.committed-stream"].output


def test_chaff_that_closes_a_streamed_error_with_done_loses_committed_stream(tmp_path: Path) -> None:
    criteria = ("gateway.committed-stream",)
    verdict = _verdicts(_run(_chaff("gateway-stream-error-done", tmp_path), criteria), criteria)[criteria[0]]
    assert not verdict.passed
    assert "local-stream-error: the client's stream has [DONE]" in verdict.output
    assert "local-cut" not in verdict.output


def test_a_refused_connection_is_graded_before_the_probe_has_seen_the_stop(tmp_path: Path) -> None:
    """Each refused case runs in a start of the gateway of its own, whose probe has not seen the
    stop: the reference tries the local route, is refused and falls back, streamed or not; a gateway
    that does not fall back on a connection error fails both (with the 0.25 s probe of the first
    start it passed: its probe had seen the stop, so it skipped the route)."""
    criteria = ("gateway.fallback-refused",)
    run = _run(REFERENCE, criteria)
    verdict = _verdicts(run, criteria)[criteria[0]]
    assert verdict.passed, verdict.output
    for name in ("refused", "refused-stream"):
        answer = run.cases[name].answers[0]
        assert answer["status"] == 200
        assert answer_header(answer, "x-gateway-attempts") == "local,api", name
    chaff = _run(_chaff("gateway-refused-not-fallback", tmp_path), criteria)
    verdict = _verdicts(chaff, criteria)[criteria[0]]
    assert not verdict.passed
    assert "refused: the client got HTTP 500" in verdict.output, verdict.output
    assert "refused-stream: the client got HTTP 500" in verdict.output, verdict.output


def test_a_gateway_that_never_listens_fails_every_criterion_with_the_reason(tmp_path: Path) -> None:
    folder = tmp_path / "silent"
    (folder / "gateway").mkdir(parents=True)
    (folder / "gateway" / "gateway.py").write_text("import time\ntime.sleep(60)\n")
    submission = Submission(folder, {"contract": 1, "gateway": {"command": ["python", "gateway/gateway.py"]}})
    with Sandbox(folder) as box:
        started = time.monotonic()
        plan = dataclasses.replace(PLAN, start_timeout_s=2.0)
        run = run_gateway(box, submission, plan, seed=0, hang=_hang(), cases=PLAN.cases[:2])
        assert time.monotonic() - started < 30
    verdict = _verdicts(run, ("gateway.fallback-5xx",))["gateway.fallback-5xx"]
    assert not verdict.passed and "did not start" in verdict.output and "127.0.0.1:18080" in verdict.output


ONCE = """\
import runpy, sys
from pathlib import Path

marker = Path("started-once")
if marker.exists():
    sys.exit("once.py: this gateway starts only once")
marker.write_text("")
sys.path.insert(0, "gateway")
sys.argv[0] = "gateway/gateway.py"
runpy.run_path("gateway/gateway.py", run_name="__main__")
"""


def test_a_gateway_that_starts_only_once_fails_the_refused_cases_by_name(tmp_path: Path) -> None:
    """The refused cases need starts of their own: a gateway that will not start again fails them,
    saying so, and keeps what its first start earned."""
    folder = tmp_path / "once"
    shutil.copytree(REFERENCE / "gateway", folder / "gateway", ignore=shutil.ignore_patterns("__pycache__"))
    (folder / "gateway" / "once.py").write_text(ONCE)
    submission = Submission(folder, {"contract": 1, "gateway": {"command": ["python", "gateway/once.py"]}})
    criteria = ("gateway.fallback-refused", "gateway.fallback-5xx")
    names = _cases_of(criteria)
    with Sandbox(folder) as box:
        started = time.monotonic()
        run = run_gateway(
            box, submission, PLAN, seed=0, hang=_hang(), cases=tuple(c for c in PLAN.cases if c.name in names)
        )
        took = time.monotonic() - started
    verdicts = _verdicts(run, criteria)
    assert verdicts["gateway.fallback-5xx"].passed, verdicts["gateway.fallback-5xx"].output
    refused = verdicts["gateway.fallback-refused"]
    assert not refused.passed
    assert (
        "refused: the gateway did not start again: nothing listened on 127.0.0.1:18080: the gateway exited first (exit code 1)"
        in refused.output
    )
    assert "refused-stream: the gateway did not start again" in refused.output
    # a start that exits is not waited on for the start limit (20 s a start)
    assert took < 2 * PLAN.start_timeout_s, took
    assert "this gateway starts only once" in run.logs


def test_sandbox_sends_requests_at_once_and_writes_only_plain_names(tmp_path: Path) -> None:
    (tmp_path / "sub").mkdir()
    with Sandbox(tmp_path / "sub") as box:
        server = box.serve("slow", token_rate=20, max_num_seqs=8, output_len_min=10, output_len_max=10)
        body = {
            "model": "fake-model",
            "max_tokens": 10,
            "messages": [{"role": "user", "content": "hi"}],
            "stream": True,
        }
        started = time.monotonic()
        answers = box.http_many(
            [{"method": "POST", "url": server["base_url"] + "/chat/completions", "json": body, "stream": True}] * 4,
            timeout_s=20,
        )
        took = time.monotonic() - started
        records = box.ledger("slow")
        path = box.write_file("grader-config.yaml", "contract: 1\n")
        with pytest.raises(SandboxError, match="not a plain file name"):
            box.write_file("../escape.yaml", "x")
    assert [a["status"] for a in answers] == [200] * 4
    assert all(a["events"][-1][1] == "[DONE]" for a in answers)
    # four half-second streams sent at once overlap on the server: each began before any ended
    assert max(r["arrival"] for r in records) < min(r["finished"] for r in records)
    assert took < 4 * 0.5, took
    assert path.endswith("/work/grader-config.yaml")
