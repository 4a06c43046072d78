"""The contract's sizing arithmetic, as the grader computes it from the flags it sent.

The formulas are the ones `schemas/contract/README.md` states, written out here so the grader never
runs a submission's code (the reference's included) to know the right answer. Exact fractions keep
the rounding points honest (a load of exactly two replicas needs two, not three).
"""

from __future__ import annotations

import copy
import json
import math
from dataclasses import dataclass
from fractions import Fraction
from functools import lru_cache
from typing import Any

__all__ = ["DEFAULTS", "Conventions", "expected"]

#: Defaults the contract gives to flags a set may leave out.
DEFAULTS: dict[str, Any] = {
    "gpus-per-replica": 1,
    "min-replicas": 2,
    "hours-per-month": 720,
    "gpu-memory-utilization": 0.92,
    "kv-cache-dtype": "auto",
    "batch-output-tokens": None,
}
GB, GIB = 10**9, 2**30


@dataclass(frozen=True)
class Conventions:
    """What a submission may state and be graded by: its default month, and GiB for memory."""

    hours_per_month: float | None = None  # the output's own default when the flag was left out
    gib: bool = False


def _q(value: Any) -> Fraction:
    return Fraction(str(value))


def _list(value: Any) -> list[Any]:
    return list(value) if isinstance(value, list) else [value]


def expected(flags: dict[str, Any], conventions: Conventions = Conventions()) -> dict[str, Any]:
    """Every graded output field for `flags` (dashed flag names, as sent), as floats and ints.

    Worked out once for each input set and conventions: every sizing criterion and the memo's figures ask
    again for the same sets, and a re-judged round asks for them in every grade. The caller gets its own copy."""
    return copy.deepcopy(_worked_out(json.dumps(flags, sort_keys=True), conventions))


@lru_cache(maxsize=256)
def _worked_out(flags_json: str, conventions: Conventions) -> dict[str, Any]:
    flags: dict[str, Any] = json.loads(flags_json)
    f = {**DEFAULTS, **flags}
    if conventions.hours_per_month is not None and "hours-per-month" not in flags:
        f["hours-per-month"] = conventions.hours_per_month
    throughput, gpus = _q(f["throughput"]), int(f["gpus-per-replica"])
    turns, out_tokens = int(f["turns-per-chat"]), int(f["output-tokens-per-turn"])
    peak = _q(f["chats-per-day"]) * turns * out_tokens / (_q(f["active-hours"]) * 3600) * _q(f["peak-factor"])
    for_load = math.ceil(peak / throughput)
    replicas = max(for_load, int(f["min-replicas"]))
    hours = _q(f["hours-per-month"])
    chats_month = _q(f["chats-per-day"]) * hours / 24
    prices, utils = _list(f["gpu-hour-usd"]), _list(f["utilisation"])
    monthly = {(p, n): _q(p) * gpus * n * hours for p in prices for n in sorted({1, replicas})}
    api_chat = (
        turns
        * (
            int(f["input-tokens-per-turn"]) * _q(f["api-input-usd-per-million"])
            + out_tokens * _q(f["api-output-usd-per-million"])
        )
        / 10**6
    )
    kv_bytes = Fraction(int(f["kv-bytes-per-token"])) / (1 if f["kv-cache-dtype"] == "auto" else 2)
    usable = _q(f["gpu-memory-gb"]) * _q(f["gpu-memory-utilization"]) - _q(f["overhead-gb"])
    free = gpus * usable - _q(f["weights-gb"])
    kv_tokens = max(0, math.floor(free * (GIB if conventions.gib else GB) / kv_bytes))
    sequences = kv_tokens // int(f["context-tokens"])
    batch = f["batch-output-tokens"]
    return {
        "peak_output_tokens_per_s": float(peak),
        "replicas_for_load": for_load,
        "replicas": replicas,
        "per_stream_output_tokens_per_s": float(throughput / int(f["concurrency"])),
        "cost_per_million_output_tokens": [
            {"gpu_hour_usd": p, "utilisation": u, "usd": float(_q(p) * gpus / (throughput * _q(u) * 3600 / 10**6))}
            for p in prices
            for u in utils
        ],
        "monthly_cost": [
            {"gpu_hour_usd": p, "replicas": n, "usd": float(monthly[p, n])}
            for p in prices
            for n in sorted({1, replicas})
        ],
        "cost_per_chat_usd": [{"gpu_hour_usd": p, "usd": float(monthly[p, replicas] / chats_month)} for p in prices],
        "chats_per_month": float(chats_month),
        "api": {
            "cost_per_chat_usd": float(api_chat),
            "list_usd_per_million_output_tokens": float(_q(f["api-output-usd-per-million"])),
            "usd_per_million_output_tokens_with_input": float(api_chat / (turns * out_tokens) * 10**6),
            "monthly_usd": float(api_chat * chats_month),
        },
        "kv_cache": {
            "bytes_per_token": float(kv_bytes),
            "tokens": kv_tokens,
            "sequences_at_context": sequences,
            "holds_concurrency": sequences >= int(f["concurrency"]),
        },
        "batch_hours": None if batch is None else float(int(batch) / throughput / 3600),
    }
