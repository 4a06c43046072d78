"""The sizing arithmetic, as plain functions of the inputs (no I/O, no defaults, no constants but units).

Exact rational arithmetic (fractions.Fraction from the decimal text of each input) keeps the
rounding points honest: 2 replicas' worth of load needs 2 replicas, not 3 from a stray 1e-16,
and a KV-cache budget that divides exactly is not floored one token short.
"""

from __future__ import annotations

import math
from fractions import Fraction
from typing import Any

from inputs import Inputs

__all__ = ["DAYS_PER_MONTH", "size"]

SECONDS_PER_HOUR = 3600
PER_MILLION = 1_000_000
BYTES_PER_GB = 10**9
#: Chats per month = chats per day x 30, as the contract defines it (720 h = 30 days).
DAYS_PER_MONTH = 30


def exact(value: float | int) -> Fraction:
    """The number as typed: float("0.92") is 0.9200000000000000177..., Fraction("0.92") is 23/25."""
    return Fraction(str(value))


def peak_output_tokens_per_s(i: Inputs) -> Fraction:
    """Output tokens per second in the busiest hour: the day's output spread over its active hours, times the peak."""
    per_day = exact(i.chats_per_day) * i.turns_per_chat * i.output_tokens_per_turn
    return per_day / (exact(i.active_hours) * SECONDS_PER_HOUR) * exact(i.peak_factor)


def replicas_for_load(peak: Fraction, throughput: float) -> int:
    """Replicas whose summed throughput covers the peak."""
    return math.ceil(peak / exact(throughput))


def cost_per_million_output_tokens(gpu_hour_usd: float, gpus: int, throughput: float, utilisation: float) -> Fraction:
    """USD of billed GPU time per million output tokens: idle time is billed too, so it divides by utilisation."""
    tokens_per_billed_hour = exact(throughput) * exact(utilisation) * SECONDS_PER_HOUR
    return exact(gpu_hour_usd) * gpus / (tokens_per_billed_hour / PER_MILLION)


def monthly_cost(gpu_hour_usd: float, gpus: int, replicas: int, hours_per_month: float) -> Fraction:
    """USD per month for `replicas` replicas billed around the clock, busy or not."""
    return exact(gpu_hour_usd) * gpus * replicas * exact(hours_per_month)


def chats_per_month(i: Inputs) -> int:
    return i.chats_per_day * DAYS_PER_MONTH


def api_cost_per_chat(i: Inputs) -> Fraction:
    """USD per chat on the API, input tokens billed at the input price and output at the output price."""
    per_turn = (i.input_tokens_per_turn * exact(i.api_input_usd_per_million)
                + i.output_tokens_per_turn * exact(i.api_output_usd_per_million)) / PER_MILLION
    return per_turn * i.turns_per_chat


def kv_cache_tokens(i: Inputs) -> int:
    """Tokens of KV cache left on one GPU: its usable memory less weights and overhead, over bytes per token.

    Zero when weights and overhead already exceed the budget (vLLM would not start).
    """
    free_gb = exact(i.gpu_memory_gb) * exact(i.gpu_memory_utilization) - exact(i.weights_gb) - exact(i.overhead_gb)
    return max(0, math.floor(free_gb * BYTES_PER_GB / i.kv_bytes_per_token))


def batch_hours(output_tokens: int | None, throughput: float) -> Fraction | None:
    """Hours one replica needs for a batch's output tokens at the stated throughput."""
    if output_tokens is None:
        return None
    return output_tokens / exact(throughput) / SECONDS_PER_HOUR


def _num(value: Fraction) -> float:
    """A float with 12 significant digits: exact enough, without binary noise such as 4305.599999999999."""
    return float(f"{float(value):.12g}")


def size(i: Inputs) -> dict[str, Any]:
    """The whole sizing answer as the contract's JSON object."""
    peak = peak_output_tokens_per_s(i)
    for_load = replicas_for_load(peak, i.throughput)
    replicas = max(for_load, i.min_replicas)
    month_chats = chats_per_month(i)
    # One replica's bill first, then the chosen count's: the reader sees what each replica adds.
    counts = sorted({1, replicas})
    monthly = {(price, n): monthly_cost(price, i.gpus_per_replica, n, i.hours_per_month)
               for price in i.gpu_hour_usd for n in counts}
    api_chat = api_cost_per_chat(i)
    kv_tokens = kv_cache_tokens(i)
    batch = batch_hours(i.batch_output_tokens, i.throughput)
    return {
        "contract": 1,
        "inputs": i.to_dict(),
        "peak_output_tokens_per_s": _num(peak),
        "replicas_for_load": for_load,
        "replicas": replicas,
        "cost_per_million_output_tokens": [
            {"gpu_hour_usd": price, "utilisation": u,
             "usd": _num(cost_per_million_output_tokens(price, i.gpus_per_replica, i.throughput, u))}
            for price in i.gpu_hour_usd for u in i.utilisation],
        "monthly_cost": [{"gpu_hour_usd": price, "replicas": n, "usd": _num(monthly[price, n])}
                         for price in i.gpu_hour_usd for n in counts],
        "cost_per_chat_usd": [{"gpu_hour_usd": price, "usd": _num(monthly[price, replicas] / month_chats)}
                              for price in i.gpu_hour_usd],
        "api": {"cost_per_chat_usd": _num(api_chat),
                "cost_per_million_output_tokens_usd": _num(exact(i.api_output_usd_per_million)),
                "monthly_usd": _num(api_chat * month_chats)},
        "kv_cache": {"tokens": kv_tokens, "sequences_at_context": kv_tokens // i.context_tokens},
        "batch_hours": None if batch is None else _num(batch),
    }
