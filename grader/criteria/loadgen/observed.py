"""A load-generator run as its checks read it: the record's raw facts, and what judging derives from them.

The record (grader/records/loadgen.py) keeps only what the run left. Reading the ledger's truth of every
request, and pairing each request the candidate reported with one of them, are the first steps of judging,
so they happen here, when a check is about to read the run.
"""

from __future__ import annotations

from dataclasses import dataclass, field, fields

from grader.criteria.matching import Pair, match
from grader.criteria.truth import Truth, truth_of
from grader.records.loadgen import LoadgenRun

__all__ = ["Observed", "observe"]


@dataclass
class Observed(LoadgenRun):
    """A `LoadgenRun` with the ledger's truth of each request (in arrival order) and the pairing."""

    truths: list[Truth] = field(init=False)
    pairs: list[Pair] = field(init=False)

    def __post_init__(self) -> None:
        super().__post_init__()
        timeout = self.scenario.loadgen.get("timeout_s")  # the client's, when the scenario gives it one
        usage = bool(self.scenario.server.get("stream_usage", True))  # does its server send usage at all?
        self.truths = sorted((truth_of(r, timeout, usage=usage) for r in self.ledger), key=lambda t: t.number)
        self.pairs = match(self.requests, self.truths)


def observe(run: LoadgenRun) -> Observed:
    """The run as its checks read it (the record itself is left as it was)."""
    if isinstance(run, Observed):
        return run
    return Observed(**{f.name: getattr(run, f.name) for f in fields(LoadgenRun) if f.init})
