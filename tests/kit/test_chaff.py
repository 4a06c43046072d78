"""Chaff: every one builds from its base, a bad chaff is refused by name, and each defect is real.

The defects are shown cheaply: each load-generator chaff runs once, as the grader runs it (its
`loadgen.command` from its folder), against a fake server in the scenario where its defect shows,
and the one figure it gets wrong is held to the server's ledger. The test-suite chaff run their
own tests the way the grader does: with a wrong percentile method swapped in for the function
`loadgen.percentile` names (by the grader's injected `sitecustomize`), or with the fake server's
slot limit removed.
"""

from __future__ import annotations

import filecmp
import json
import os
import subprocess
import sys
import textwrap
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml
from conftest import FakeServer
from kit_paths import ROOT

from fake_server import RunningServer
from grader.contract import ContractError, load_submission
from grader.kit.chaff import ChaffError, list_chaff, materialize, read_chaff
from grader.running.tests import CANDIDATE_PLUGINS

SUBMISSIONS = ROOT / "submissions"
REFERENCE = SUBMISSIONS / "reference"
CRITERIA = {c["id"] for c in yaml.safe_load((ROOT / "grader" / "rubric" / "rubric.yaml").read_text())["criteria"]}


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    dest = tmp_path_factory.mktemp("chaff")
    return {c.name: materialize(c.path, dest / c.name) for c in list_chaff(SUBMISSIONS / "chaff")}


def _files(folder: Path) -> set[str]:
    return {p.relative_to(folder).as_posix() for p in folder.rglob("*") if p.is_file() and "__pycache__" not in p.parts}


def test_every_chaff_builds_into_a_submission_that_follows_the_contract(built: dict[str, Path]) -> None:
    chaff = list_chaff(SUBMISSIONS / "chaff")
    assert [c.name for c in chaff] == sorted(built) and len(chaff) >= 21
    for c in chaff:
        assert c.defect and "\n" not in c.defect
        if c.scores_nothing:
            continue
        assert set(c.targets) <= CRITERIA, f"{c.name}: targets not in grader/rubric/rubric.yaml"
        if c.name == "memo-figure-unknown-field":  # its defect is a break of the contract, named by the check
            with pytest.raises(ContractError, match="front matter: figures"):
                load_submission(built[c.name])
            continue
        assert load_submission(built[c.name]).percentile.spec == "loadgen.percentiles:nearest_rank"


def test_every_load_generator_and_test_criterion_has_a_chaff() -> None:
    covered = {t for c in list_chaff(SUBMISSIONS / "chaff") for t in c.targets}
    wanted = {i for i in CRITERIA if i.startswith(("loadgen.", "tests."))} - {"loadgen.runs"}
    assert wanted <= covered, f"no chaff targets {sorted(wanted - covered)}"


def test_a_chaff_differs_from_its_base_only_in_the_files_its_edits_name(built: dict[str, Path]) -> None:
    for c in list_chaff(SUBMISSIONS / "chaff"):
        folder = built[c.name]
        assert _files(folder) == _files(c.base_path)
        changed = {f for f in _files(folder) if not filecmp.cmp(folder / f, c.base_path / f, shallow=False)}
        assert changed == {e.file for e in c.edits}, c.name


# --- bad chaff are refused with the chaff, the field and the edit named ---------------------------


def _chaff(tmp_path: Path, text: str) -> Path:
    base = tmp_path / "subs" / "base"
    base.mkdir(parents=True, exist_ok=True)
    (base / "submission.yaml").write_text("contract: 1\n")
    (base / "a.py").write_text("x = 1\ny = 1\n")
    folder = tmp_path / "subs" / "chaff" / "bad"
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "chaff.yaml").write_text(text)
    return folder


GOOD_HEAD = "base: base\ndefect: x is two\ntargets: [loadgen.ttft]\n"


def test_edits_apply_in_order_to_a_copy(tmp_path: Path) -> None:
    folder = _chaff(
        tmp_path,
        GOOD_HEAD
        + textwrap.dedent("""\
        edits:
          - {file: a.py, find: "x = 1", replace: "x = 2"}
          - {file: a.py, find: "x = 2\\ny", replace: "x = 3\\ny"}
        """),
    )
    out = materialize(folder, tmp_path / "out")
    assert (out / "a.py").read_text() == "x = 3\ny = 1\n"
    assert (tmp_path / "subs" / "base" / "a.py").read_text() == "x = 1\ny = 1\n"
    assert read_chaff(folder).targets == ("loadgen.ttft",)


@pytest.mark.parametrize(
    ("edits", "message"),
    [
        (
            '[{file: a.py, find: "z = 1", replace: ""}]',
            "chaff bad: edits[0] (a.py): `find` occurs 0 times, must occur exactly once (it begins 'z = 1')",
        ),
        (
            '[{file: a.py, find: "x = 1", replace: "x = 2"}, {file: a.py, find: "x = 1", replace: ""}]',
            "chaff bad: edits[1] (a.py): `find` occurs 0 times",
        ),  # the first edit changed it
        ('[{file: a.py, find: "= 1", replace: ""}]', "chaff bad: edits[0] (a.py): `find` occurs 2 times"),
        ('[{file: b.py, find: "x", replace: ""}]', "chaff bad: edits[0] (b.py): no such file in base base"),
    ],
)
def test_an_edit_that_does_not_apply_exactly_once_is_named_and_leaves_nothing(
    tmp_path: Path, edits: str, message: str
) -> None:
    folder = _chaff(tmp_path, GOOD_HEAD + f"edits: {edits}\n")
    with pytest.raises(ChaffError) as caught:
        materialize(folder, tmp_path / "out")
    assert message in str(caught.value)
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize(
    ("text", "message"),
    [
        (GOOD_HEAD + 'edits: [{file: ../a.py, find: "x", replace: ""}]', "edits[0]: file: '../a.py' must stay inside"),
        (GOOD_HEAD + 'edits: [{file: a.py, find: "x"}]', "edits[0]: must have exactly the keys file, find, replace"),
        (GOOD_HEAD + 'edits: [{file: a.py, find: "", replace: "y"}]', "edits[0] (a.py): find: must be non-empty"),
        (GOOD_HEAD + "edits: []", "edits: must be a non-empty list"),
        (
            "base: base\ndefect: d\ntargets: [TTFT]\nedits: [{file: a.py, find: x, replace: y}]",
            "targets[0]: 'TTFT' is not a criterion id",
        ),
        ("base: base\ndefect: d\nedits: []\ncolour: red\n", "unknown key(s) colour; missing key(s) targets"),
        (
            "base: ../x\ndefect: d\ntargets: [a.b]\nedits: [{file: a.py, find: x, replace: y}]",
            "base: must name a folder",
        ),
        ("base: base\ndefect: [unclosed\n", "line 3: not valid YAML"),
        (GOOD_HEAD + 'unseen: "yes"\nedits: [{file: a.py, find: "x", replace: ""}]', "unseen: must be true or false"),
    ],
)
def test_a_malformed_chaff_yaml_is_named_by_field(tmp_path: Path, text: str, message: str) -> None:
    folder = _chaff(tmp_path, text)
    with pytest.raises(ChaffError) as caught:
        materialize(folder, tmp_path / "out")
    assert message in str(caught.value) and "bad" in str(caught.value)


def test_a_destination_with_something_in_it_is_refused_an_empty_one_is_used(tmp_path: Path) -> None:
    folder = _chaff(tmp_path, GOOD_HEAD + 'edits: [{file: a.py, find: "x = 1", replace: "x = 2"}]\n')
    (tmp_path / "out").mkdir()
    (tmp_path / "out" / "old.txt").write_text("left from before")
    with pytest.raises(ChaffError, match="already exists and is not an empty folder"):
        materialize(folder, tmp_path / "out")
    (tmp_path / "out" / "old.txt").unlink()
    assert (materialize(folder, tmp_path / "out") / "a.py").read_text() == "x = 2\ny = 1\n"


def test_a_failed_build_into_an_empty_folder_leaves_it_empty(tmp_path: Path) -> None:
    folder = _chaff(tmp_path, GOOD_HEAD + 'edits: [{file: a.py, find: "nope", replace: ""}]\n')
    (tmp_path / "out").mkdir()
    with pytest.raises(ChaffError, match="occurs 0 times"):
        materialize(folder, tmp_path / "out")
    assert list((tmp_path / "out").iterdir()) == []


# --- each load-generator defect is real: the figure it gets wrong, against the ledger -------------

Results = dict[str, Any]  # a load generator's results file, as the contract has it
Ledger = list[dict[str, Any]]  # the fake server's ledger: one record a request
Check = Callable[[Results, Ledger], None]  # what a defect gets wrong, asserted from its results and the ledger


def _loadgen(
    folder: Path, server: RunningServer, out: Path, requests: int, concurrency: int, max_tokens: int, *flags: str
) -> subprocess.CompletedProcess[str]:
    argv = [
        sys.executable,
        "-m",
        "loadgen",
        "--base-url",
        server.openai_base_url,
        "--model",
        "fake-model",
        "--requests",
        str(requests),
        "--concurrency",
        str(concurrency),
        "--prompt-tokens",
        "16",
        "--max-tokens",
        str(max_tokens),
        "--output",
        str(out),
        *flags,
    ]
    return subprocess.run(argv, cwd=folder, capture_output=True, text=True, timeout=60, check=False)


def _run(
    folder: Path, server: RunningServer, out: Path, requests: int, concurrency: int, max_tokens: int, *flags: str
) -> dict[str, Any]:
    done = _loadgen(folder, server, out, requests, concurrency, max_tokens, *flags)
    assert done.returncode == 0 and "Traceback" not in done.stderr, done.stderr[-2000:]
    results: Results = json.loads(out.read_text())
    return results


def _ttft(record: dict[str, Any]) -> float:
    ttft: float = record["first_content"] - record["arrival"]
    return ttft


def _most_in_flight(ledger: list[dict[str, Any]]) -> int:
    moments = sorted([(r["arrival"], 1) for r in ledger] + [(r["finished"], -1) for r in ledger])
    level = top = 0
    for _, step in moments:
        level += step
        top = max(top, level)
    return top


def _role_first(results: Results, ledger: Ledger) -> None:
    truth = {r["id"]: r for r in ledger}
    assert all(r["ttft_s"] < _ttft(truth[r["id"]]) - 0.1 for r in results["requests"])  # the role chunk, 150 ms early


def _headers_first(results: Results, ledger: Ledger) -> None:
    truth = {r["id"]: r for r in ledger}
    assert all(r["ttft_s"] < _ttft(truth[r["id"]]) - 0.2 for r in results["requests"])  # headers, 300 ms early


def _outcomes(expected: set[tuple[Any, ...]], *keys: str) -> Check:
    def check(results: Results, ledger: Ledger) -> None:
        assert {tuple(r[k] for k in keys) for r in results["requests"]} == expected

    return check


def _chunks_as_tokens(results: Results, ledger: Ledger) -> None:
    truth = {r["id"]: r for r in ledger}
    assert all(r["output_tokens"] < truth[r["id"]]["content_tokens"] for r in results["requests"])


def _in_flight(expected: Callable[[int], bool]) -> Check:
    def check(results: Results, ledger: Ledger) -> None:
        assert expected(_most_in_flight(ledger)), _most_in_flight(ledger)

    return check


def _throughput_swapped(results: Results, ledger: Ledger) -> None:
    summary = results["summary"]
    aggregate = summary["output_tokens"] / summary["wall_s"]
    assert all(r["tps"] == pytest.approx(aggregate) for r in results["requests"])  # everyone's "speed" is the total
    # and the total is one user's: with four streams at once, well under the aggregate (a quarter of it when all
    # four overlap throughout; a busy machine that starts them late overlaps them less)
    assert summary["throughput_tokens_per_s"] < aggregate / 1.5


def _tps_over_whole_request(results: Results, ledger: Ledger) -> None:
    truth = {r["id"]: r for r in ledger}
    for r in results["requests"]:
        record = truth[r["id"]]
        content = [t for t, kind, _ in record["chunks"] if kind == "content"]
        assert content[-1] - content[0] < 0.15 and r["output_tokens"] / r["tps"] > 0.3  # the 300 ms stall counted


def _linear(results: Results, ledger: Ledger) -> None:
    ttft = results["summary"]["ttft_s"]
    assert ttft["n"] == 6 and ttft["p99"] < ttft["max"]  # nearest rank gives the maximum for n < 100


def _p99_unlabelled(results: Results, ledger: Ledger) -> None:
    assert results["summary"]["ttft_s"]["n"] == 4 and results["summary"]["ttft_s"]["p99_is_max"] is False


def _wall_from_first_end(results: Results, ledger: Ledger) -> None:
    requests = results["requests"]
    first_duration = min(r["end"] for r in requests) - min(r["start"] for r in requests)
    true_wall = max(r["end"] for r in requests) - min(r["start"] for r in requests)
    assert first_duration > 0.05 and results["summary"]["wall_s"] < true_wall - first_duration / 2


def _slot_wait_in_ttft(results: Results, ledger: Ledger) -> None:
    """A request that waited for a free concurrency slot was 'sent' long before the server saw it."""
    arrival = {r["id"]: r["arrival"] for r in ledger}
    leads = [arrival[r["id"]] - r["start"] for r in results["requests"] if r["id"] in arrival]
    assert max(leads) > 0.05  # the second request waited for the first (16 tokens at 200 tokens/s)


def _empty_counted_ok(results: Results, ledger: Ledger) -> None:
    assert all(r["outcome"] == "ok" and r["ttft_s"] > 0 for r in results["requests"])
    assert all(r["content_tokens"] == 0 for r in ledger)  # the server sent no content at all


def _framing_fails(results: Results, ledger: Ledger) -> None:
    assert all(r["outcome"] == "failed" for r in results["requests"])
    assert all(r["status"] == 200 and r["finish_reason"] in ("stop", "length") for r in ledger)  # sent whole


def _joined_data_lost(results: Results, ledger: Ledger) -> None:
    assert all(r["status"] == 200 for r in ledger)  # every stream was sent, its events over several data lines
    assert all((r["outcome"], r["failure"]) == ("failed", "malformed") for r in results["requests"])


def _no_tokens_without_usage(results: Results, ledger: Ledger) -> None:
    assert all(sum(1 for _, kind, n in r["chunks"] if kind == "content" and n) > 0 for r in ledger)  # it streamed
    assert all(r["output_tokens"] == 0 and r["tokens_from"] != "content_deltas" for r in results["requests"])


def _prompt_too_short(results: Results, ledger: Ledger) -> None:
    asked = results["config"]["prompt_tokens"]
    assert all(r["message_tokens"] < asked / 2 for r in ledger), [r["message_tokens"] for r in ledger]


def _partial_tokens_counted(results: Results, ledger: Ledger) -> None:
    summary = results["summary"]
    assert summary["ok"] == 0 and summary["output_tokens"] > 0 and summary["throughput_tokens_per_s"] > 0


def _unlisted_status_missed(results: Results, ledger: Ledger) -> None:
    assert all(r["status"] == 502 for r in ledger)  # an error status none of the public scenarios sends
    assert all(r["failure"] != "http_status" or r["status"] != 502 for r in results["requests"])


def _failed_ttft_sampled(results: Results, ledger: Ledger) -> None:
    summary = results["summary"]
    assert summary["ok"] == 0 and all(r["ttft_s"] is None for r in results["requests"])
    assert summary["ttft_s"]["n"] == len(results["requests"])  # every failed request's TTFT is a sample


def _ttft_at_reasoning(results: Results, ledger: Ledger) -> None:
    truth = {r["id"]: r for r in ledger}
    # 12 reasoning tokens at 40 tokens/s: the first content comes 300 ms after the first reasoning delta
    assert all(r["ttft_s"] < _ttft(truth[r["id"]]) - 0.2 for r in results["requests"])


def _reasoning_in_output(results: Results, ledger: Ledger) -> None:
    truth = {r["id"]: r for r in ledger}
    for r in results["requests"]:
        record = truth[r["id"]]
        assert record["reasoning_tokens"] == 12
        assert r["output_tokens"] == record["content_tokens"] + record["reasoning_tokens"]


STALL_HEADERS = {"faults": [{"kind": "stall_after_headers", "seconds": 0.3}], "token_rate": 500}
SLOW = {"max_num_seqs": 16, "token_rate": 200, "output_len_min": 16, "output_len_max": 16}
THINKS = {"reasoning": True, "reasoning_tokens": 12, "token_rate": 40, "output_len_min": 64, "output_len_max": 64}
# chaff, fake server, requests, concurrency, max_tokens, what it gets wrong
DEFECTS: list[tuple[str, dict[str, Any], int, int, int, Check]] = [
    ("ttft-from-role-chunk", {"scenario": "role-chunk-early"}, 2, 2, 32, _role_first),
    ("ttft-from-headers", STALL_HEADERS, 2, 2, 16, _headers_first),
    ("ttft-includes-slot-wait", SLOW, 2, 1, 16, _slot_wait_in_ttft),
    ("reasoning-counted-ok", {"scenario": "reasoning-empty"}, 2, 2, 32, _empty_counted_ok),
    ("missing-done-ok", {"scenario": "missing-done"}, 2, 2, 32, _outcomes({("ok",)}, "outcome")),
    ("stream-error-ok", {"scenario": "stream-error"}, 2, 2, 32, _outcomes({("ok",)}, "outcome")),
    ("malformed-crash", {"scenario": "malformed-chunk"}, 2, 2, 32, _outcomes({("ok",)}, "outcome")),
    ("cut-ok", {"scenario": "cut-mid-stream"}, 2, 2, 32, _outcomes({("ok",)}, "outcome")),
    (
        "status-dropped",
        {"scenario": "not-found"},
        2,
        2,
        32,
        _outcomes({("failed", "connection", None)}, "outcome", "failure", "status"),
    ),
    ("tokens-by-chunks", {"scenario": "multi-token-chunks"}, 2, 2, 40, _chunks_as_tokens),
    ("unbounded-concurrency", SLOW, 6, 2, 32, _in_flight(lambda most: most > 2)),
    ("concurrency-off-by-one", SLOW, 6, 3, 32, _in_flight(lambda most: most == 2)),
    ("throughput-as-tps", {"scenario": "baseline"}, 4, 4, 32, _throughput_swapped),
    ("tps-includes-ttft", STALL_HEADERS, 2, 2, 16, _tps_over_whole_request),
    ("linear-percentiles", {"scenario": "baseline"}, 6, 6, 16, _linear),
    ("p99-not-labelled", {"scenario": "baseline"}, 4, 4, 16, _p99_unlabelled),
    ("wall-from-first-end", SLOW, 4, 2, 32, _wall_from_first_end),
    ("sse-needs-space", {"scenario": "sse-crlf-nospace"}, 2, 2, 16, _framing_fails),
    ("sse-data-per-line", {"scenario": "sse-multiline"}, 2, 2, 16, _joined_data_lost),
    ("tokens-none-without-usage", {"stream_usage": False}, 2, 2, 16, _no_tokens_without_usage),
    ("loadgen-prompt-hi-repeated", {"scenario": "baseline"}, 2, 2, 16, _prompt_too_short),
    ("failures-in-throughput", {"scenario": "cut-mid-stream"}, 2, 2, 32, _partial_tokens_counted),
    ("summary-counts-failed", {"scenario": "cut-mid-stream"}, 2, 2, 32, _failed_ttft_sampled),
    ("ttft-from-reasoning", THINKS, 2, 2, 24, _ttft_at_reasoning),
    ("reasoning-tokens-as-output", THINKS, 2, 2, 24, _reasoning_in_output),
    (
        "loadgen-error-statuses-listed",
        {"faults": [{"kind": "http_error", "status": 502}]},
        2,
        2,
        16,
        _unlisted_status_missed,
    ),
]


@pytest.mark.sampled(5)  # a sample each run, every one over many (tests/sampling.py)
@pytest.mark.parametrize(
    ("name", "server_settings", "requests", "concurrency", "max_tokens", "wrong"), DEFECTS, ids=[d[0] for d in DEFECTS]
)
def test_the_load_generator_defect_is_real(
    built: dict[str, Path],
    fake_server: FakeServer,
    tmp_path: Path,
    name: str,
    server_settings: dict[str, Any],
    requests: int,
    concurrency: int,
    max_tokens: int,
    wrong: Check,
) -> None:
    server = fake_server(**server_settings)
    results = _run(built[name], server, tmp_path / "results.json", requests, concurrency, max_tokens)
    wrong(results, server.ledger())


@pytest.mark.sampled(5)  # a sample each run, every one over many (tests/sampling.py)
@pytest.mark.parametrize(
    ("name", "server_settings", "requests", "concurrency", "max_tokens", "wrong"), DEFECTS, ids=[d[0] for d in DEFECTS]
)
def test_the_reference_gets_that_figure_right(
    fake_server: FakeServer,
    tmp_path: Path,
    name: str,
    server_settings: dict[str, Any],
    requests: int,
    concurrency: int,
    max_tokens: int,
    wrong: Check,
) -> None:
    """The same run and check on the reference must not find the defect, or the check shows nothing."""
    server = fake_server(**server_settings)
    results = _run(REFERENCE, server, tmp_path / "results.json", requests, concurrency, max_tokens)
    with pytest.raises(AssertionError):
        wrong(results, server.ledger())


def test_a_run_with_failed_requests_still_completes(
    built: dict[str, Path], fake_server: FakeServer, tmp_path: Path
) -> None:
    """Failures are results: the contract's exit code 0 means the run completed, whatever its outcomes."""
    server = fake_server(scenario="cut-mid-stream")
    reference = _loadgen(REFERENCE, server, tmp_path / "reference.json", 2, 2, 32)
    assert reference.returncode == 0, reference.stderr[-2000:]
    chaff = _loadgen(built["loadgen-exits-nonzero-on-failures"], server, tmp_path / "chaff.json", 2, 2, 32)
    assert chaff.returncode == 1 and "Traceback" not in chaff.stderr
    assert json.loads((tmp_path / "chaff.json").read_text())["summary"]["failed"] == 2  # its results are whole


def _stalled_request(folder: Path, fake_server: FakeServer, out: Path) -> dict[str, Any]:
    """One request whose stream stalls 2.5 s after its headers, under --timeout-s 0.6."""
    server = fake_server(faults=[{"kind": "stall_after_headers", "seconds": 2.5, "requests": [1]}], token_rate=500)
    requests: list[dict[str, Any]] = _run(folder, server, out, 1, 1, 8, "--timeout-s", "0.6")["requests"]
    (request,) = requests
    return request


@pytest.mark.rotating(12)
def test_the_timeout_is_the_flags_and_not_a_constant(
    built: dict[str, Path], fake_server: FakeServer, tmp_path: Path
) -> None:
    reference = _stalled_request(REFERENCE, fake_server, tmp_path / "reference.json")
    assert (reference["outcome"], reference["failure"]) == ("failed", "timeout")
    assert 0.5 < reference["end"] - reference["start"] < 1.2
    fixed = _stalled_request(built["loadgen-timeout-fixed"], fake_server, tmp_path / "fixed.json")
    assert (fixed["outcome"], fixed["failure"]) == ("failed", "timeout")  # right outcome, at its own 1.5 s
    assert fixed["end"] - fixed["start"] > 1.4
    ignored = _stalled_request(built["loadgen-no-timeout"], fake_server, tmp_path / "ignored.json")
    assert ignored["outcome"] == "ok" and ignored["end"] - ignored["start"] > 2.4  # waited the stall out


def test_a_p99_from_a_hundred_samples_or_more_is_not_the_maximum(
    built: dict[str, Path], fake_server: FakeServer, tmp_path: Path
) -> None:
    """Nearest rank over 101 samples: the p99 is the 100th, so it is labelled a p99, not the maximum."""

    def ttft(folder: Path, out: Path) -> dict[str, Any]:
        server = fake_server(max_num_seqs=32, token_rate=2000, output_len_min=2, output_len_max=2)
        summary: dict[str, Any] = _run(folder, server, out, 101, 16, 2)["summary"]["ttft_s"]
        return summary

    reference = ttft(REFERENCE, tmp_path / "reference.json")
    assert reference["n"] == 101 and reference["p99_is_max"] is False
    chaff = ttft(built["loadgen-p99-always-max"], tmp_path / "chaff.json")
    assert chaff["n"] == 101 and chaff["p99_is_max"] is True


def test_every_load_generator_chaff_has_its_defect_shown() -> None:
    shown = {d[0] for d in DEFECTS} | {
        "loadgen-exits-nonzero-on-failures",
        "loadgen-timeout-fixed",
        "loadgen-no-timeout",
        "loadgen-p99-always-max",
    }
    assert shown == {
        c.name for c in list_chaff(SUBMISSIONS / "chaff") if c.targets and c.targets[0].startswith("loadgen.")
    }


# --- the test-suite chaff, run as the grader runs a candidate's tests -----------------------------

# The grader's own swap: an injected sitecustomize replaces the `loadgen.percentile` function when its
# module is first imported, in the test process and in any child process, and leaves a marker.
INJECTED = ROOT / "grader" / "running" / "injected"


def _pytest(folder: Path, test_file: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    """The candidate's test file run as the grade runs it: with the kit's pytest plugins and no others."""
    argv = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", f"loadgen/tests/{test_file}"]
    plugins = {"PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1", "PYTEST_PLUGINS": ",".join(CANDIDATE_PLUGINS)}
    return subprocess.run(
        argv, cwd=folder, capture_output=True, text=True, timeout=120, check=False, env={**os.environ, **plugins, **env}
    )


def _swap(marker: Path, folder: Path, method: str) -> dict[str, str]:
    return {
        "GRADER_PERCENTILE": load_submission(folder).percentile.spec,
        "GRADER_PERCENTILE_METHOD": method,
        "GRADER_PERCENTILE_MARKER": str(marker),
        "PYTHONPATH": os.pathsep.join([str(INJECTED), os.environ.get("PYTHONPATH", "")]),
    }


@pytest.mark.slow
@pytest.mark.rotating(27)
def test_weak_percentile_tests_let_floor_rank_through_where_the_reference_tests_do_not(
    built: dict[str, Path], tmp_path: Path
) -> None:
    weak, marker = built["weak-percentile-tests"], tmp_path / "swapped"
    assert _pytest(weak, "test_percentiles.py", {}).returncode == 0  # they pass on the right method
    assert _pytest(weak, "test_percentiles.py", _swap(marker, weak, "floor")).returncode == 0
    assert marker.read_text().split() == ["loadgen.percentiles:nearest_rank"]  # the swap did happen
    assert _pytest(weak, "test_percentiles.py", _swap(marker, weak, "linear")).returncode != 0
    for method in ("floor", "linear", "off-by-one", "unsorted"):
        assert _pytest(REFERENCE, "test_percentiles.py", _swap(marker, REFERENCE, method)).returncode != 0, method


@pytest.mark.slow
@pytest.mark.rotating(14)
def test_no_slot_test_passes_on_a_server_without_a_slot_limit_where_the_reference_test_fails(
    built: dict[str, Path],
) -> None:
    unlimited = {"FAKE_SERVER_IGNORE_SLOT_LIMIT": "1"}
    assert _pytest(built["no-slot-test"], "test_slots.py", unlimited).returncode == 0
    done = _pytest(REFERENCE, "test_slots.py", unlimited)
    assert done.returncode != 0 and "test_more_requests_than_slots_raise_p90_ttft" in done.stdout


@pytest.mark.slow
def test_tests_fail_chaff_fails_on_its_own_code(built: dict[str, Path]) -> None:
    done = _pytest(built["tests-fail"], "test_percentiles.py", {})
    assert done.returncode != 0 and "test_with_eight_requests_p90_and_p99_are_both_the_slowest" in done.stdout
