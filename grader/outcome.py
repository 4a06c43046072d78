"""What a grade is made of: one result per criterion, with the evidence behind it.

Every report format (Gradescope JSON, JUnit XML, the HTML page) is an export of these
dataclasses, so the formats can never disagree about a score. A criterion's status is one of

    passed        full marks
    failed        zero, or a fraction where the criterion scores a fraction (chaff caught)
    inconclusive  zero points and flagged for a person: still borderline after one rerun
    skipped       not run: the deliverable broke the contract, or `--only` left it out

Evidence is what a hiring team needs to believe the status: what the grader sent, what the
candidate reported, what the ledgers show, as a small table and, where a picture says more, plots.
"""

from __future__ import annotations

from dataclasses import dataclass, field, fields, is_dataclass
from typing import Any, Literal

__all__ = [
    "NEAR_MISS",
    "STATUSES",
    "CriterionResult",
    "Evidence",
    "Grade",
    "Plot",
    "Status",
    "Unseen",
    "Visibility",
    "edition_fit_sentence",
]

Status = Literal["passed", "failed", "inconclusive", "skipped"]
Visibility = Literal["public", "hidden"]
STATUSES: tuple[Status, ...] = ("passed", "failed", "inconclusive", "skipped")
#: A timing check's margin (its worst error over its tolerance) from which a pass is a near miss.
NEAR_MISS = 0.5


@dataclass
class Plot:
    """Data for one chart; the HTML report draws it, other formats ignore it.

    kind: "scatter" (points, e.g. candidate TTFT against ledger TTFT per request; a y = x line is
    drawn when `diagonal`), "step" (a value over time, e.g. requests in flight), or "bar".
    series: name -> list of (x, y) points.
    """

    kind: Literal["scatter", "step", "bar"]
    title: str
    x_label: str
    y_label: str
    series: dict[str, list[tuple[float, float]]]
    diagonal: bool = False


@dataclass
class Evidence:
    sent: str = ""  # what the grader did: scenario, server settings, the command line
    reported: str = ""  # what the candidate said, in short
    truth: str = ""  # what the ledgers show, in short
    columns: list[str] = field(default_factory=list)  # a per-request (or per-case) table
    rows: list[list[Any]] = field(default_factory=list)
    plots: list[Plot] = field(default_factory=list)
    logs: str = ""  # tails of the candidate's stdout/stderr, when they help


@dataclass
class Unseen:
    """A criterion's verdict on the unseen variants of its scenarios: for the hiring team only."""

    status: Literal["passed", "failed"]
    output: str
    evidence: Evidence = field(default_factory=Evidence)


@dataclass
class CriterionResult:
    id: str  # rubric id, e.g. "loadgen.role-chunk"
    title: str  # the short text a candidate sees
    deliverable: str  # loadgen | tests | gateway | manifests | sizing | memo | contract
    weight: float  # max score
    visibility: Visibility
    status: Status
    score: float
    output: str  # why, in a few lines a candidate can act on (tolerance stated)
    tolerance: str = ""
    scenario: str = ""
    duration_s: float = 0.0
    attempts: int = 1  # 2 when a borderline first run was rerun
    evidence: Evidence = field(default_factory=Evidence)
    margin: float | None = None  # a timing check's worst error over its tolerance (last run)
    busy: str | None = None  # why the machine was judged too busy to keep time (last run), if it was
    unseen: Unseen | None = None  # its verdict on unseen variants (never shown to the candidate)
    closest: str = ""  # a timing check's closest call, with its limit ("request 3: `start` 74 ms before ...")
    rerun: str = ""  # why it was judged twice: the first attempt's margin and closest call

    @property
    def near_miss(self) -> bool:
        """A pass that came close to a limit (margin NEAR_MISS or more) or was judged twice: worth a look."""
        return self.status == "passed" and (self.attempts > 1 or (self.margin is not None and self.margin >= NEAR_MISS))

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = _plain(self)
        return out


def edition_fit_sentence(edition: dict[str, Any]) -> str:
    """The finding a grade's edition record holds, for a person ("" when the numbers fit their own edition)."""
    fit = edition.get("fits") if isinstance(edition, dict) else None
    if not isinstance(fit, dict):
        return ""
    fields = ", ".join(str(f) for f in fit.get("fields") or [])
    return f"fits edition {fit.get('edition')}; was issued {fit.get('issued')} (it carries {fields})"


@dataclass
class Grade:
    submission: str  # the folder or archive graded, as given
    candidate: str | None
    seed: int
    started: str  # ISO 8601, UTC
    duration_s: float
    sandboxed: bool
    sandbox_note: str  # how it was isolated, or why it was not ("UNSANDBOXED: ...")
    rubric: str  # which rubric file graded it
    contract_problems: list[str] = field(default_factory=list)
    criteria: list[CriterionResult] = field(default_factory=list)
    human_checklist: list[str] = field(default_factory=list)  # what a person must still judge
    inherent_s: float = 0.0  # how long the candidate's own commands ran: the part of duration_s no grader can save
    section_s: dict[str, float] = field(default_factory=dict)  # each section's runs its criteria share, in seconds
    # what it was graded against: {name, contract, kit} (grader/shared/contracts.py Edition), and `fits` when the
    # submission carries another edition's numbers (grader/grading/edition_fit.py); empty: not known
    edition: dict[str, Any] = field(default_factory=dict)

    @property
    def edition_fit(self) -> str:
        """ "fits edition X; was issued Y (it carries ...)" when the submission carries another edition's numbers."""
        return edition_fit_sentence(self.edition)

    @property
    def score(self) -> float:
        return round(sum(c.score for c in self.criteria), 6)

    @property
    def max_score(self) -> float:
        return round(sum(c.weight for c in self.criteria), 6)

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = _plain(self)
        out["score"], out["max_score"] = self.score, self.max_score
        return out


def _plain(value: Any) -> Any:
    """`value` as dicts, lists and scalars, as `dataclasses.asdict` gives it, without deep-copying each scalar:
    a grade's evidence holds thousands of them, and every report of every re-judged grade converts it."""
    if is_dataclass(value) and not isinstance(value, type):
        return {f.name: _plain(getattr(value, f.name)) for f in fields(value)}
    if isinstance(value, list):
        return [_plain(v) for v in value]
    if isinstance(value, tuple):
        return tuple(_plain(v) for v in value)
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    return value
