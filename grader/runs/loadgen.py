"""Run the candidate's load generator once in a scenario, and keep everything a check needs.

The fake server runs inside the sandbox, started by the grader's harness; the candidate's command
gets its URL and flags, writes its results file in its work folder, and the harness hands back
the file and the server's ledger. A `LoadgenRun` is those raw facts (its run record); what follows
from them (the parsed results, the ledger's truth, the pairing) is derived, never stored. Nothing
here judges: the checks in criteria/loadgen.py do.
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
    seed: int
    argv: list[str]
    exit_code: int | None
    killed: str | None
    stdout_tail: str
    stderr_tail: str
    wall_s: float
    results_file: str  # the name the command was told to write its results to
    results_text: str | None  # that file as the command wrote it (None: not written)
    ledger: list[dict[str, Any]]
    # derived from the facts above
    results: dict[str, Any] | None = field(init=False)  # the parsed results file, when it is a JSON object
    problems: list[str] = field(init=False)  # why the results file is missing, unreadable or off-contract
    truths: list[Truth] = field(init=False)
    pairs: list[Pair] = field(init=False)

    def __post_init__(self) -> None:
        self.results, self.problems = _parse(self.results_text, self.results_file)
        if self.exit_code != 0:
            self.problems.insert(0, f"the command exited with {self.exit_code}" + (f" ({self.killed})" if self.killed else ""))
        self.truths = sorted((truth_of(r) for r in self.ledger), key=lambda t: t.number)
        self.pairs = match(self.requests, self.truths)

    def to_record(self) -> dict[str, Any]:
        return {"scenario": self.scenario.to_dict(), "seed": self.seed, "argv": self.argv, "exit_code": self.exit_code,
                "killed": self.killed, "stdout_tail": self.stdout_tail, "stderr_tail": self.stderr_tail,
                "wall_s": self.wall_s, "files": {self.results_file: self.results_text}, "ledger": self.ledger}

    @classmethod
    def from_record(cls, data: dict[str, Any]) -> LoadgenRun:
        (results_file, results_text), = data["files"].items()
        return cls(Scenario.from_dict(data["scenario"]), int(data["seed"]), list(data["argv"]), data["exit_code"],
                   data["killed"], str(data["stdout_tail"]), str(data["stderr_tail"]), float(data["wall_s"]),
                   results_file, results_text, list(data["ledger"]))

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
    return LoadgenRun(scenario, seed, argv, result.exit_code, result.killed, result.stdout_tail, result.stderr_tail,
                      result.wall_s, output, (result.files or {}).get(output), ledger)


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
