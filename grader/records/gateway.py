"""The gateway section's run record: one start of the candidate's gateway, and what every case sent, got back
and left in both fake servers' ledgers.

A `CaseRun` is one case's raw facts: the requests the grader sent, the answers its own client got,
both ledgers' records and `/stats` before and after. A `GatewayRun` is one start of the gateway and
its cases, by name. Nothing here judges: the checks in criteria/gateway/ do.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from grader.rubric.gateway_plan import Case, GatewayPlan, read_plan

__all__ = ["CaseRun", "GatewayRun", "timed_out"]


def timed_out(answer: dict[str, Any]) -> bool:
    """The grader stopped waiting for this answer (as opposed to a refused connection, or an answer)."""
    return answer.get("status") is None and "timed out" in str(answer.get("error") or "").lower()


@dataclass
class CaseRun:
    case: Case
    t0: float  # Unix time the case's first request was sent
    sent: list[dict[str, Any]] = field(default_factory=list)
    answers: list[dict[str, Any]] = field(default_factory=list)  # netops answers (+ "sent_at", "done_at")
    local: list[dict[str, Any]] = field(default_factory=list)  # ledger records
    api: list[dict[str, Any]] = field(default_factory=list)
    stats_before: Any = None
    stats_after: Any = None
    local_stopped: bool = False
    extra: dict[str, Any] = field(default_factory=dict)
    problem: str = ""  # the case could not run (a sandbox error; no new start)

    def to_dict(self) -> dict[str, Any]:
        return {
            "case": self.case.to_dict(),
            "t0": self.t0,
            "sent": self.sent,
            "answers": self.answers,
            "local": self.local,
            "api": self.api,
            "stats_before": self.stats_before,
            "stats_after": self.stats_after,
            "local_stopped": self.local_stopped,
            "extra": self.extra,
            "problem": self.problem,
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> CaseRun:
        return cls(
            Case.from_dict(data["case"]),
            float(data["t0"]),
            list(data["sent"]),
            list(data["answers"]),
            list(data["local"]),
            list(data["api"]),
            data["stats_before"],
            data["stats_after"],
            bool(data["local_stopped"]),
            dict(data["extra"]),
            str(data["problem"]),
        )


@dataclass
class GatewayRun:
    plan: GatewayPlan
    argv: list[str]
    started: bool
    start_problem: str
    cases: dict[str, CaseRun]
    wall_s: float  # the time the gateway ran
    inherent_s: float  # sum of the cases' own durations (stalls, streams, waits)
    stdout_tail: str = ""
    stderr_tail: str = ""
    seed: int = 0

    def to_record(self) -> dict[str, Any]:
        return {
            "plan": self.plan.to_dict(),
            "seed": self.seed,
            "argv": self.argv,
            "started": self.started,
            "start_problem": self.start_problem,
            "wall_s": self.wall_s,
            "inherent_s": self.inherent_s,
            "stdout_tail": self.stdout_tail,
            "stderr_tail": self.stderr_tail,
            "cases": [run.to_dict() for run in self.cases.values()],
        }

    @classmethod
    def from_record(cls, data: dict[str, Any]) -> GatewayRun:
        cases = [CaseRun.from_dict(c) for c in data["cases"]]
        return cls(
            read_plan(data["plan"]),
            list(data["argv"]),
            bool(data["started"]),
            str(data["start_problem"]),
            {c.case.name: c for c in cases},
            float(data["wall_s"]),
            float(data["inherent_s"]),
            str(data["stdout_tail"]),
            str(data["stderr_tail"]),
            int(data["seed"]),
        )

    @property
    def logs(self) -> str:
        out = f"$ {' '.join(self.argv)}"
        if self.stdout_tail.strip():
            out += f"\n--- stdout (tail) ---\n{self.stdout_tail[-3000:]}"
        if self.stderr_tail.strip():
            out += f"\n--- stderr (tail) ---\n{self.stderr_tail[-3000:]}"
        return out
