"""The grader's building blocks, on real ledgers from real fake servers: truth, pairing, chaff swaps."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import httpx
import pytest
from api_client import SSEDecoder
from conftest import FakeServer, chat_body
from kit_paths import ROOT

from grader.criteria.matching import Pair, match
from grader.criteria.truth import (
    in_flight_series,
    max_in_flight,
    nearest_rank,
    truth_of,
)
from grader.outcome import CriterionResult
from grader.records.tests import PERCENTILE_METHODS
from grader.running.tests import CANDIDATE_PLUGINS

INJECTED = ROOT / "grader" / "running" / "injected"


def test_nearest_rank_on_known_lists() -> None:
    # The seed's lesson: with eight requests, p90 and p99 are both the slowest one.
    eight = [0.8, 0.1, 0.7, 0.2, 0.6, 0.3, 0.5, 0.4]
    assert nearest_rank(eight, 90) == nearest_rank(eight, 99) == 0.8
    assert nearest_rank(eight, 50) == 0.4  # rank ceil(4.0) = 4
    ten: list[float] = list(range(1, 11))
    assert nearest_rank(ten, 90) == 9 and nearest_rank(ten, 91) == 10 and nearest_rank(ten, 10) == 1
    hundred: list[float] = list(range(1, 101))
    assert nearest_rank(hundred, 7) == 7  # in floats 7/100*100 rounds up to rank 8
    assert nearest_rank([], 50) is None


def test_in_flight_counts_an_end_before_an_arrival_at_the_same_instant() -> None:
    assert max_in_flight([(0.0, 1.0), (1.0, 2.0), (1.5, 3.0)]) == 2
    assert in_flight_series([(0.0, 1.0)]) == [(0.0, 1), (1.0, 0)]


def _stream(base_url: str, content: str = "hello", max_tokens: int = 6) -> str | None:
    """Read a whole stream (a cut one too) and return its response id, None if it had none."""
    ids = []
    try:
        with httpx.stream("POST", f"{base_url}/chat/completions", json=chat_body(content, max_tokens=max_tokens)) as r:
            decoder = SSEDecoder()
            for text in r.iter_text():
                ids += [json.loads(data).get("id") for data in decoder.feed(text) if data.startswith("{")]
    except httpx.RemoteProtocolError:
        pass
    return ids[0] if ids else None


def _paired(pair: Pair) -> tuple[Any, int, str]:
    """A pair's reported index, ledger number and how they were paired."""
    assert pair.reported is not None and pair.truth is not None, pair  # both sides: a pair, not one left unmatched
    return pair.reported["index"], pair.truth.number, pair.how


def test_truth_of_real_records_and_pairing_by_id_then_by_order_and_status(fake_server: FakeServer) -> None:
    server = fake_server(
        token_rate=500,
        output_len_min=32,
        output_len_max=32,
        role_chunk="on_schedule",
        prefill_overhead=0.05,
        faults=[
            {"kind": "http_error", "status": 503, "requests": [2]},
            {"kind": "cut", "after_tokens": 3, "requests": [3]},
        ],
    )
    ids = [_stream(server.openai_base_url) for _ in range(3)]
    truths = sorted((truth_of(r) for r in server.ledger(settle=2.0)), key=lambda t: t.number)
    ok, error, cut = truths
    assert (ok.outcome, error.outcome, cut.outcome) == ("ok", "failed", "failed")
    assert error.reasons == {"http_status"} and error.status == 503
    assert cut.reasons == {"connection", "no_done"}
    # The role chunk went out 50 ms before the first content: TTFT is taken at content.
    assert ok.ttft_s is not None and ok.ttft_s >= 0.05
    assert ok.tokens == 6 and ok.tps is not None and ok.tps > 0
    assert ids[1] is None  # the 503 carried no id

    reported = [
        {"index": 0, "id": ids[0], "status": 200, "start": 1.0},
        {"index": 1, "id": None, "status": 503, "start": 2.0},
        {"index": 2, "id": ids[2], "status": 200, "start": 3.0},
    ]
    pairs = match(reported, truths)
    assert [_paired(p) for p in pairs] == [
        (0, 1, "id"),
        (2, 3, "id"),
        (1, 2, "order and status"),
    ]
    # A request the ledger never saw, and one the candidate forgot, are both left unpaired.
    pairs = match([{"index": 0, "id": "chatcmpl-nope", "status": 200}], truths)
    assert sum(p.how == "unmatched" for p in pairs) == 4


def _run_with_swap(tmp_path: Path, method: str) -> dict[str, object]:
    """Import a module through the injected sitecustomize, the way a candidate's test run does."""
    (tmp_path / "pkg").mkdir(exist_ok=True)
    (tmp_path / "pkg" / "__init__.py").write_text("")
    (tmp_path / "pkg" / "pct.py").write_text(
        "import math\n"
        "def nearest(values, p):\n"
        "    s = sorted(values)\n"
        "    return s[max(math.ceil(p * len(s) / 100), 1) - 1] if s else None\n"
    )
    (tmp_path / "pkg" / "user.py").write_text("from pkg.pct import nearest\n")
    probe = (
        "import json, pkg.user as u\n"
        "print(json.dumps({str(p): u.nearest([5, 1, 4, 2, 3, 10, 9, 8, 7, 6], p) for p in (10, 50, 90, 95)}))\n"
    )
    env = {
        **os.environ,
        "PYTHONPATH": str(INJECTED),
        "GRADER_PERCENTILE": "pkg.pct:nearest",
        "GRADER_PERCENTILE_METHOD": method,
        "GRADER_PERCENTILE_MARKER": str(tmp_path / "marker"),
    }
    out = subprocess.run(
        [sys.executable, "-c", probe], cwd=tmp_path, env=env, capture_output=True, text=True, check=True
    )
    return {"values": json.loads(out.stdout), "marked": (tmp_path / "marker").exists()}


def test_no_swap_leaves_the_candidates_function_alone(tmp_path: Path) -> None:
    got = _run_with_swap(tmp_path, "none")
    assert got == {"values": {"10": 1, "50": 5, "90": 9, "95": 10}, "marked": False}


@pytest.mark.parametrize("method", PERCENTILE_METHODS)
def test_each_wrong_method_is_swapped_in_before_any_module_binds_the_name(tmp_path: Path, method: str) -> None:
    got = _run_with_swap(tmp_path, method)
    assert got["marked"], "the swap left no marker"
    # Every wrong method differs from nearest rank on this unsorted list at some percentile.
    assert got["values"] != {"10": 1, "50": 5, "90": 9, "95": 10}


def test_tps_truth_ends_at_the_last_visible_content_not_at_a_late_finish_chunk(fake_server: FakeServer) -> None:
    words, late = 6, 0.3
    server = fake_server(
        token_rate=200,
        output_len_min=words,
        output_len_max=words,
        faults=[{"kind": "stall", "after_tokens": words, "seconds": late}],
    )
    _stream(server.openai_base_url, max_tokens=32)
    (record,) = server.ledger(settle=2.0)
    truth = truth_of(record)
    content = [t for t, kind, _ in record["chunks"] if kind == "content"]
    (finish,) = [t for t, kind, _ in record["chunks"] if kind == "finish"]
    assert finish - content[-1] >= late * 0.9  # the end-of-sequence chunk came late
    assert truth.outcome == "ok" and truth.tokens == words + 1  # usage counts the end-of-sequence token
    assert truth.tps == pytest.approx((words + 1) / (content[-1] - content[0]))


_PERCENTILE_TEST = """\
from loadgen.loadgen import percentile


def test_nearest_rank():
    assert percentile([5, 1, 4, 2, 3, 10, 9, 8, 7, 6], 90) == 9
"""
_NEAREST = """\
import math


def percentile(values, p):
    s = sorted(values)
    return s[max(math.ceil(p * len(s) / 100), 1) - 1] if s else None
"""


@pytest.mark.parametrize("where", ["loadgen/tests/test_pct.py", "loadgen/test_pct.py"])
def test_the_starters_layout_imports_by_the_dotted_name_and_gets_swapped(tmp_path: Path, where: str) -> None:
    """With the starter's loadgen/__init__.py, a test beside loadgen.py or in loadgen/tests imports
    `loadgen.loadgen` by that name (no "'loadgen' is not a package"), and the grader's swap reaches it."""
    (tmp_path / "loadgen").mkdir()
    shutil.copy(ROOT / "starter" / "loadgen" / "__init__.py", tmp_path / "loadgen")
    (tmp_path / "loadgen" / "loadgen.py").write_text(_NEAREST)
    (tmp_path / where).parent.mkdir(parents=True, exist_ok=True)
    (tmp_path / where).write_text(_PERCENTILE_TEST)
    env = {
        **os.environ,
        "PYTHONPATH": str(INJECTED),
        "GRADER_PERCENTILE": "loadgen.loadgen:percentile",
        "GRADER_PERCENTILE_MARKER": str(tmp_path / "marker"),
        "PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1",
        "PYTEST_PLUGINS": ",".join(CANDIDATE_PLUGINS),
    }  # as the grader runs a candidate's tests
    argv = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", str(Path(where).parent)]
    own = subprocess.run(
        argv, cwd=tmp_path, env={**env, "GRADER_PERCENTILE_METHOD": "none"}, capture_output=True, text=True, check=False
    )
    assert own.returncode == 0, own.stdout + own.stderr
    swapped = subprocess.run(
        argv,
        cwd=tmp_path,
        env={**env, "GRADER_PERCENTILE_METHOD": "linear"},
        capture_output=True,
        text=True,
        check=False,
    )
    assert swapped.returncode != 0 and (tmp_path / "marker").exists(), swapped.stdout + swapped.stderr


def test_a_stream_of_a_few_milliseconds_is_timed_no_finer_than_its_span_tolerance() -> None:
    """At the domain's far corner (2,000 tokens/s, 8 tokens a chunk) a stream's span is 4 ms, and a correct client
    reads it 0.7 ms long, 15% low in TPS: the span's own tolerance keeps it; a span with TTFT in it fails."""
    from grader.criteria.loadgen.requests import tps_margin
    from grader.rubric import load_rubric

    tps = load_rubric().criterion("loadgen.tps")
    tokens, truth = 8, 2000.0  # a span of 4 ms
    late = tokens / (tokens / truth + 0.0007)  # read 0.7 ms long: 15% low
    assert (late - truth) / truth < -0.14
    assert tps_margin(late, truth, tokens, tps) < 0.5
    with_ttft = tokens / (tokens / truth + 0.1)  # the span run from the send, TTFT in it: 100 ms more
    assert tps_margin(with_ttft, truth, tokens, tps) > 3
    # beside two CPU hogs, 16 streams of 64 tokens at 2,000 tokens/s (a 32 ms span, one token a chunk) were read
    # up to 22% low (bench/results/corners.json): 9 ms late on the last delta, a pass with room, not a rerun
    behind = 64 / (64 / truth + 0.009)
    assert (behind - truth) / truth < -0.21 and tps_margin(behind, truth, 64, tps) < 0.7
    # a long stream is judged by its rate: 20% off over 1 s of span fails, whatever the milliseconds
    assert tps_margin(160.0, 200.0, 200, tps) > 1


def _one_token_grade(submission: Path, folder: Path) -> CriterionResult:
    """`loadgen.tps` on the baseline moved to one token a request: every TPS is null by the brief's definition."""
    import yaml

    from grader.grading.grade import GradeRequest, grade

    data = yaml.safe_load((ROOT / "grader" / "rubric" / "rubric.yaml").read_text())
    data["scenarios"]["baseline"]["loadgen"].update(max_tokens=1, requests=4)
    (folder / "rubric.yaml").write_text(yaml.safe_dump(data, sort_keys=False))
    request = GradeRequest(
        submission,
        folder / "report",
        only=("loadgen.tps",),
        seed=3,
        rubric=folder / "rubric.yaml",
        scenarios=("baseline",),
        with_variants=False,
        echo=lambda _: None,
    )
    (result,) = grade(request).criteria
    return result


def test_tps_of_a_one_token_answer_is_judged_null_not_left_with_nothing_to_judge(tmp_path: Path) -> None:
    """At the domain's corner of one token a request no request has a TPS: a client that writes null, as the brief
    defines it, passes on those nulls; one that writes a number for them fails."""
    passed = _one_token_grade(ROOT / "submissions" / "reference", tmp_path)
    assert passed.status == "passed", passed.output
    assert "null for the 4 with fewer than two content deltas" in passed.output
    planted = tmp_path / "zero-tps"
    shutil.copytree(ROOT / "submissions" / "reference", planted, ignore=shutil.ignore_patterns("__pycache__"))
    client = planted / "loadgen" / "client.py"
    text = client.read_text()
    assert "tps=tracker.tps(tokens))" in text
    client.write_text(text.replace("tps=tracker.tps(tokens))", "tps=tracker.tps(tokens) or 0.0)"))
    (tmp_path / "again").mkdir()
    failed = _one_token_grade(planted, tmp_path / "again")
    assert failed.status == "failed" and "TPS 0, yet it had fewer than two content deltas" in failed.output
