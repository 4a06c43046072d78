"""Pair each request a load generator reported with the ledger record of the same request.

By response id first (every streamed chunk carries it). A request that failed before any chunk
(an HTTP error) has no id to report, so those are paired by order and status: the k-th reported
request without an id and with status S goes with the k-th unpaired ledger record with status S,
both in the order they were sent. Anything left over is reported as unmatched, never guessed.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from grader.criteria.truth import Truth

__all__ = ["Pair", "match"]


@dataclass(frozen=True)
class Pair:
    reported: dict[str, Any] | None  # the candidate's request record
    truth: Truth | None  # the ledger's
    how: str  # "id" | "order and status" | "unmatched"


def _start(record: dict[str, Any]) -> float:
    value = record.get("start")
    return float(value) if isinstance(value, int | float) else float("inf")


def match(reported: list[Any], truths: list[Truth]) -> list[Pair]:
    by_id = {t.id: t for t in truths}
    pairs: list[Pair] = []
    used: set[str] = set()
    without_id: list[dict[str, Any]] = []
    for record in reported:
        if not isinstance(record, dict):
            pairs.append(Pair(None, None, "unmatched"))
            continue
        rid = record.get("id")
        if isinstance(rid, str) and rid in by_id and rid not in used:
            used.add(rid)
            pairs.append(Pair(record, by_id[rid], "id"))
        elif rid is None:
            without_id.append(record)
        else:
            pairs.append(Pair(record, None, "unmatched"))
    left = sorted((t for t in truths if t.id not in used), key=lambda t: t.number)
    for record in sorted(without_id, key=_start):
        status = record.get("status")
        found = next((t for t in left if t.status == status), None)
        if found is None:
            pairs.append(Pair(record, None, "unmatched"))
        else:
            left.remove(found)
            pairs.append(Pair(record, found, "order and status"))
    pairs.extend(Pair(None, t, "unmatched") for t in left)
    return pairs
