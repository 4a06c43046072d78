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

__all__ = ["HUNG", "MODEL", "Box", "LoadgenRun", "expected_s", "limit_s", "not_run", "run_loadgen"]

MODEL = "fake-model"
HUNG = "wall timeout"  # how the sandbox says a command ran past its limit and was stopped


class Box(Protocol):
    """What the criteria need of a sandbox (grader.sandbox.Sandbox)."""

    def serve(self, name: str, **settings: Any) -> dict[str, Any]: ...
    def stop_server(self, name: str) -> None: ...
    def ledger(self, name: str, settle: float = ...) -> list[dict[str, Any]]: ...
    def run(
        self,
        argv: list[str],
        *,
        timeout_s: float,
        env: dict[str, str] | None = ...,
        inject: dict[str, str] | None = ...,
        files_back: list[str] = ...,
    ) -> Any: ...


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
    limit_s: float  # the command was stopped at this many seconds (its scenario's limit)
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
        if self.killed == HUNG:
            self.problems = [self.hung()]  # what it wrote before it hung is not judged
        elif self.killed and self.killed.startswith("not run"):
            self.problems = [self.killed]
        elif self.exit_code != 0:
            self.problems.insert(
                0, f"the command exited with {self.exit_code}" + (f" ({self.killed})" if self.killed else "")
            )
        self.truths = sorted((truth_of(r) for r in self.ledger), key=lambda t: t.number)
        self.pairs = match(self.requests, self.truths)

    def to_record(self) -> dict[str, Any]:
        return {
            "scenario": self.scenario.to_dict(),
            "seed": self.seed,
            "argv": self.argv,
            "exit_code": self.exit_code,
            "killed": self.killed,
            "stdout_tail": self.stdout_tail,
            "stderr_tail": self.stderr_tail,
            "wall_s": self.wall_s,
            "limit_s": self.limit_s,
            "files": {self.results_file: self.results_text},
            "ledger": self.ledger,
        }

    @classmethod
    def from_record(cls, data: dict[str, Any]) -> LoadgenRun:
        ((results_file, results_text),) = data["files"].items()
        return cls(
            Scenario.from_dict(data["scenario"]),
            int(data["seed"]),
            list(data["argv"]),
            data["exit_code"],
            data["killed"],
            str(data["stdout_tail"]),
            str(data["stderr_tail"]),
            float(data["wall_s"]),
            float(data["limit_s"]),
            results_file,
            results_text,
            list(data["ledger"]),
        )

    @property
    def requests(self) -> list[Any]:
        value = (self.results or {}).get("requests")
        return value if isinstance(value, list) else []

    @property
    def summary(self) -> dict[str, Any]:
        value = (self.results or {}).get("summary")
        return value if isinstance(value, dict) else {}

    @property
    def stopped(self) -> bool:
        """It hung (stopped at its limit) or was never run: nothing it wrote is judged."""
        return self.killed == HUNG or bool(self.killed and self.killed.startswith("not run"))

    def hung(self) -> str:
        """What a command stopped at its limit left behind: the ledger's requests done, open and never sent, and
        the last lines of its output."""
        asked = self.scenario.loadgen["requests"]
        open_ = sum(1 for r in self.ledger if r.get("finished") is None)
        tail = (self.stderr_tail.strip() or self.stdout_tail.strip()).splitlines()[-5:]
        return (
            f"the command hung: stopped after {self.limit_s:g} s, this scenario's limit. The ledger shows "
            f"{len(self.ledger) - open_} request(s) done, {open_} still open and {max(0, asked - len(self.ledger))} "
            f"of the {asked} asked never sent. "
            + ("Its last lines of output:\n  " + "\n  ".join(tail) if tail else "It printed nothing.")
        )

    @property
    def logs(self) -> str:
        out = f"$ {' '.join(self.argv)}\nexit code: {self.exit_code}" + (
            f" (killed: {self.killed})" if self.killed else ""
        )
        if self.stdout_tail.strip():
            out += f"\n--- stdout (tail) ---\n{self.stdout_tail[-3000:]}"
        if self.stderr_tail.strip():
            out += f"\n--- stderr (tail) ---\n{self.stderr_tail[-3000:]}"
        return out


def expected_s(scenario: Scenario) -> float:
    """How long the scenario's requests take at its settings: waves of requests (requests over the slots the
    client may fill) times (prefill overhead + max_tokens at the token rate), plus its longest stall."""
    from fake_server import build_settings

    model = build_settings(**scenario.server).model
    flags = scenario.loadgen
    slots = max(1, min(flags["concurrency"], model.max_num_seqs))
    waves = -(-flags["requests"] // slots)
    stall = max(
        (float(f.get("seconds", 0)) for f in scenario.server.get("faults") or () if "stall" in f.get("kind", "")),
        default=0.0,
    )
    return waves * (model.prefill_overhead + flags["max_tokens"] / model.token_rate) + stall


def limit_s(scenario: Scenario, limits: dict[str, float]) -> float:
    """The scenario's limit: the rubric's start_s + per_expected x its expected duration."""
    return round(limits["start_s"] + limits["per_expected"] * expected_s(scenario), 1)


def not_run(scenario: Scenario, seed: int, why: str, argv: list[str]) -> LoadgenRun:
    """The record of a scenario the grader did not run (`killed` says why)."""
    return LoadgenRun(scenario, seed, argv, None, f"not run: {why}", "", "", 0.0, 0.0, "results.json", None, [])


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
    ]


def run_loadgen(
    box: Box, submission: Submission, scenario: Scenario, *, seed: int, timeout_s: float, label: str | None = None
) -> LoadgenRun:
    """One run of `loadgen.command` against a fresh fake server configured as `scenario` says, stopped at
    `timeout_s`."""
    name = label or scenario.name
    server = box.serve(name, **{**scenario.server, "seed": seed})
    output = f"loadgen-results-{name}.json"
    argv = loadgen_argv(submission, scenario, server["base_url"], output)
    try:
        result = box.run(argv, timeout_s=timeout_s, files_back=[output])
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
    )


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
