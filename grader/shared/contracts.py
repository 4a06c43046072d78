"""The contract versions the kit has issued: a submission is graded by the rules of the brief it was given.

A candidate works on a bundle for a week or two while the kit moves on. Any change that can fail work that met
the brief's earlier text is a new contract version; the grader keeps every version it has issued, and judges each
submission by its own (`Rubric.for_contract`): a rule the brief never had is left out of the maximum, and a rule
whose meaning changed is judged by the meaning that brief gave it. CHANGELOG.md says what each version changed.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from importlib import metadata
from typing import Any

__all__ = [
    "CONTRACTS",
    "DEFAULT_EDITION",
    "LATEST",
    "ContractVersion",
    "Edition",
    "kit_version",
    "supported",
    "version_of",
]


@dataclass(frozen=True)
class ContractVersion:
    number: int
    kit: str  # the kit version that first issued it
    issued: str  # the date of that kit's bundles
    summary: str  # what it changed, in one line


CONTRACTS = (
    ContractVersion(1, "1.0.0", "2026-12-03", "the first contract"),
    ContractVersion(
        2,
        "2.0.0",
        "2026-12-05",
        "--timeout-s; require: null is any; the sizing refusals name the flag; only total_s bounds a stream after "
        "its first event; connect_s and the probe's timeout; a probe result goes stale; the memo's own measurements",
    ),
    ContractVersion(
        3,
        "3.0.0",
        "2026-12-06",
        "--prompt-tokens is P tokens of text as the server counts them; a scenario whose server sends no usage",
    ),
    ContractVersion(
        4,
        "4.0.0",
        "2026-12-06",
        "the slot test meets servers whose slots and token rate are drawn (FAKE_SERVER_DRAW), and reads what it got",
    ),
)
LATEST = CONTRACTS[-1].number


def supported() -> tuple[int, ...]:
    """Every contract version this grader grades, oldest first."""
    return tuple(c.number for c in CONTRACTS)


def version_of(value: object) -> int | None:
    """The contract version a `contract:` field names, when this grader grades it (None otherwise)."""
    if isinstance(value, bool) or not isinstance(value, int):
        return None
    return value if value in supported() else None


#: The edition of a bundle made without `--edition`, and of a submission that names none: the seed's numbers.
DEFAULT_EDITION = "default"


@functools.cache
def kit_version() -> str:
    """This kit's version, as its package metadata (pyproject.toml) gives it."""
    try:
        return metadata.version("serving-takehome-kit")
    except metadata.PackageNotFoundError:  # run from a source tree that was never installed
        return "unknown"


@dataclass(frozen=True)
class Edition:
    """What a submission is graded against: its edition's name, the contract version of its brief, and the kit
    that grades it. Every report and grades.csv says so."""

    name: str
    contract: int
    kit: str

    def to_dict(self) -> dict[str, Any]:
        return {"name": self.name, "contract": self.contract, "kit": self.kit}

    @classmethod
    def of(cls, data: dict[str, Any]) -> Edition:
        """The edition submission.yaml's `data` follows: its `edition:` stamp's name, the contract it declares."""
        stamp = data.get("edition")
        stamp = stamp if isinstance(stamp, dict) else {}
        return cls(str(stamp.get("name") or DEFAULT_EDITION), version_of(data.get("contract")) or LATEST, kit_version())
