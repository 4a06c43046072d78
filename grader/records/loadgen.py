"""The load generator's run record: one run of the candidate's command in one scenario, as raw facts.

A `LoadgenRun` is what the run left: the command line, its exit and output tails, the results file
it wrote, and the fake server's ledger. Reading the results file (JSON, against its schema) is all
it does with them; the ledger's truth and the pairing of reported requests with ledger records are
judging, in criteria/loadgen/. The file's schema problems are found once, when the record is made,
and kept with the digest of the schema they were found against (`checked`): a record read back
with the same schema is not checked again (it is most of what re-judging a grade would cost).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any, Self

from grader.contract import schema_digest, schema_errors
from grader.rubric.load import Scenario

__all__ = ["HUNG", "LoadgenRun", "not_run"]

HUNG = "wall timeout"  # how the sandbox says a command ran past its limit and was stopped


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
    # the results file's schema problems as found when the record was made, and the schema's digest then
    checked: dict[str, Any] | None = None
    extended_s: float = 0.0  # how long past limit_s it ran while its fake server still finished requests
    cpu_waiting: float | None = None  # the share of its time some task waited for a core (None: not counted)
    # read from the facts above
    results: dict[str, Any] | None = field(init=False)  # the parsed results file, when it is a JSON object
    problems: list[str] = field(init=False)  # why the results file is missing, unreadable or off-contract

    def __post_init__(self) -> None:
        self.results, self.problems, self.checked = _parse(self.results_text, self.results_file, self.checked)
        if self.killed == HUNG:
            self.problems = [self.hung()]  # what it wrote before it hung is not judged
        elif self.killed and self.killed.startswith("not run"):
            self.problems = [self.killed]
        elif self.exit_code != 0:
            self.problems.insert(
                0, f"the command exited with {self.exit_code}" + (f" ({self.killed})" if self.killed else "")
            )

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
            **({"checked": self.checked} if self.checked is not None else {}),
            **({"extended_s": self.extended_s} if self.extended_s else {}),
            **({"cpu_waiting": self.cpu_waiting} if self.cpu_waiting is not None else {}),
        }

    @classmethod
    def from_record(cls, data: dict[str, Any]) -> Self:
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
            data.get("checked"),
            float(data.get("extended_s") or 0.0),
            data.get("cpu_waiting"),
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

    @property
    def late_exit(self) -> bool:
        """Stopped at its limit after the server had finished every request asked: what was late is the command's
        own start or exit, which a machine short of cores stretches as much as a slow client does."""
        asked = self.scenario.loadgen["requests"]
        return (
            self.killed == HUNG
            and len(self.ledger) >= asked
            and all(r.get("finished") is not None for r in self.ledger)
        )

    def hung(self) -> str:
        """What a command stopped at its limit left behind: the ledger's requests done, open and never sent, and
        the last lines of its output."""
        asked = self.scenario.loadgen["requests"]
        open_ = sum(1 for r in self.ledger if r.get("finished") is None)
        tail = (self.stderr_tail.strip() or self.stdout_tail.strip()).splitlines()[-5:]
        stopped = (
            f"stopped after {self.limit_s:g} s, this scenario's limit"
            if not self.extended_s
            else f"stopped after {self.limit_s + self.extended_s:.1f} s: this scenario's limit is {self.limit_s:g} s, "
            f"and it ran on {self.extended_s:.1f} s more while the server still finished requests"
        )
        return (
            f"the command hung: {stopped}. The ledger shows "
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


def not_run(scenario: Scenario, seed: int, why: str, argv: list[str]) -> LoadgenRun:
    """The record of a scenario the grader did not run (`killed` says why)."""
    return LoadgenRun(scenario, seed, argv, None, f"not run: {why}", "", "", 0.0, 0.0, "results.json", None, [])


def _parse(
    text: str | None, output: str, checked: dict[str, Any] | None
) -> tuple[dict[str, Any] | None, list[str], dict[str, Any] | None]:
    """The results file read: its data, its problems, and its schema check to keep (`checked`, reused when it was
    made against the same schema)."""
    if text is None:
        return None, [f"no results file: {output} was not written"], None
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        return None, [f"{output}: line {exc.lineno}: not valid JSON ({exc.msg})"], None
    if not isinstance(data, dict):
        return None, [f"{output}: the results file must be a JSON object"], None
    digest = schema_digest("loadgen-results")
    if checked is None or checked.get("schema") != digest or not isinstance(checked.get("problems"), list):
        checked = {"schema": digest, "problems": schema_errors("loadgen-results", data)}
    return data, [f"{output}: {line}" for line in checked["problems"]], checked
