"""Run the candidate's load generator once in a scenario, and keep everything a check needs.

The fake server runs inside the sandbox, started by the grader's harness; the candidate's command
gets its URL and flags, writes its results file in its work folder, and the harness hands back
the file and the server's ledger. Nothing here judges: the checks in `loadgen.py` do.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any, Protocol

from grader.contract import Submission, schema_errors
from grader.criteria.matching import Pair, match
from grader.criteria.truth import Truth, truth_of
from grader.grading.rubric import Scenario

__all__ = ["MODEL", "Box", "LoadgenRun", "run_loadgen"]

MODEL = "fake-model"
TIMEOUT_S = 90.0


class Box(Protocol):
    """What the criteria need of a sandbox (grader.sandbox.Sandbox)."""

    def serve(self, name: str, **settings: Any) -> dict[str, Any]: ...
    def stop_server(self, name: str) -> None: ...
    def ledger(self, name: str, settle: float = ...) -> list[dict[str, Any]]: ...
    def run(self, argv: list[str], *, timeout_s: float, env: dict[str, str] | None = ...,
            inject: dict[str, str] | None = ..., files_back: list[str] = ...) -> Any: ...


@dataclass
class LoadgenRun:
    scenario: Scenario
    argv: list[str]
    exit_code: int | None
    killed: str | None
    stdout_tail: str
    stderr_tail: str
    wall_s: float
    results: dict[str, Any] | None  # the parsed results file, when it is a JSON object
    problems: list[str]  # why the results file is missing, unreadable or off-contract
    ledger: list[dict[str, Any]]
    truths: list[Truth] = field(default_factory=list)
    pairs: list[Pair] = field(default_factory=list)

    @property
    def requests(self) -> list[Any]:
        value = (self.results or {}).get("requests")
        return value if isinstance(value, list) else []

    @property
    def summary(self) -> dict[str, Any]:
        value = (self.results or {}).get("summary")
        return value if isinstance(value, dict) else {}

    @property
    def logs(self) -> str:
        out = f"$ {' '.join(self.argv)}\nexit code: {self.exit_code}" + (f" (killed: {self.killed})" if self.killed else "")
        if self.stdout_tail.strip():
            out += f"\n--- stdout (tail) ---\n{self.stdout_tail[-3000:]}"
        if self.stderr_tail.strip():
            out += f"\n--- stderr (tail) ---\n{self.stderr_tail[-3000:]}"
        return out


def run_loadgen(box: Box, submission: Submission, scenario: Scenario, *, seed: int,
                label: str | None = None) -> LoadgenRun:
    """One run of `loadgen.command` against a fresh fake server configured as `scenario` says."""
    name = label or scenario.name
    server = box.serve(name, **{**scenario.server, "seed": seed})
    output = f"loadgen-results-{name}.json"
    flags = scenario.loadgen
    argv = submission.command("loadgen") + [
        "--base-url", server["base_url"], "--model", MODEL,
        "--requests", str(flags["requests"]), "--concurrency", str(flags["concurrency"]),
        "--prompt-tokens", str(flags["prompt_tokens"]), "--max-tokens", str(flags["max_tokens"]),
        "--output", output,
    ]
    try:
        result = box.run(argv, timeout_s=TIMEOUT_S, files_back=[output])
        ledger = box.ledger(name, settle=2.0)
    finally:
        box.stop_server(name)
    text = (result.files or {}).get(output)
    results, problems = _parse(text, output)
    if result.exit_code != 0:
        problems.insert(0, f"the command exited with {result.exit_code}" + (f" ({result.killed})" if result.killed else ""))
    truths = sorted((truth_of(r) for r in ledger), key=lambda t: t.number)
    run = LoadgenRun(scenario, argv, result.exit_code, result.killed, result.stdout_tail, result.stderr_tail,
                     result.wall_s, results, problems, ledger, truths)
    run.pairs = match(run.requests, truths)
    return run


def _parse(text: str | None, output: str) -> tuple[dict[str, Any] | None, list[str]]:
    if text is None:
        return None, [f"no results file: {output} was not written"]
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        return None, [f"{output}: line {exc.lineno}: not valid JSON ({exc.msg})"]
    if not isinstance(data, dict):
        return None, [f"{output}: the results file must be a JSON object"]
    return data, [f"{output}: {line}" for line in schema_errors("loadgen-results", data)]
