"""Run the candidate's load generator once in a scenario, and keep everything a check needs.

The fake server runs inside the sandbox, started by the grader's harness; the candidate's command
gets its URL and flags, writes its results file in its work folder, and the harness hands back
the file and the server's ledger, kept as a `LoadgenRun` (grader/records/loadgen.py). Nothing
here judges: the checks in criteria/loadgen/ do.
"""

from __future__ import annotations

from grader.contract import Submission
from grader.records.loadgen import LoadgenRun
from grader.rubric.durations import limit_s, watch
from grader.rubric.load import Scenario
from grader.running.cpu_wait import CpuWait
from grader.sandbox.box_api import Box

__all__ = ["MODEL", "loadgen_argv", "run_loadgen"]

MODEL = "fake-model"


def loadgen_argv(submission: Submission, scenario: Scenario, base_url: str, output: str) -> list[str]:
    """The candidate's `loadgen.command` with the flags the contract gives it for `scenario`."""
    flags = scenario.loadgen
    return submission.command("loadgen") + [
        "--base-url",
        base_url,
        "--model",
        MODEL,
        "--requests",
        str(flags["requests"]),
        "--concurrency",
        str(flags["concurrency"]),
        "--prompt-tokens",
        str(flags["prompt_tokens"]),
        "--max-tokens",
        str(flags["max_tokens"]),
        "--output",
        output,
        *(["--timeout-s", f"{flags['timeout_s']:g}"] if "timeout_s" in flags else []),
    ]


def run_loadgen(
    box: Box,
    submission: Submission,
    scenario: Scenario,
    *,
    seed: int,
    limits: dict[str, float],
    label: str | None = None,
) -> LoadgenRun:
    """One run of `loadgen.command` against a fresh fake server configured as `scenario` says, stopped at its
    limit (grader/rubric/durations.py), or later while the server still finishes requests."""
    name = label or scenario.name
    timeout_s = limit_s(scenario, limits)
    server = box.serve(name, **{**scenario.server, "seed": seed})
    output = f"loadgen-results-{name}.json"
    argv = loadgen_argv(submission, scenario, server["base_url"], output)
    try:
        waiting = CpuWait()
        result = box.run(argv, timeout_s=timeout_s, files_back=[output], watch=watch(name, scenario, limits))
        cpu_waiting = waiting.share()
        ledger = box.ledger(name, settle=2.0)
    finally:
        box.stop_server(name)
    return LoadgenRun(
        scenario,
        seed,
        argv,
        result.exit_code,
        result.killed,
        result.stdout_tail,
        result.stderr_tail,
        result.wall_s,
        timeout_s,
        output,
        (result.files or {}).get(output),
        ledger,
        extended_s=float(getattr(result, "extended_s", 0.0) or 0.0),
        cpu_waiting=cpu_waiting,
    )
