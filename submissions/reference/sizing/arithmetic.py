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

__all__ = ["days_per_month", "size"]

SECONDS_PER_HOUR = 3600
HOURS_PER_DAY = 24
PER_MILLION = 1_000_000
BYTES_PER_GB = 10**9


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


def days_per_month(i: Inputs) -> Fraction:
    """One month, as the contract defines it: --hours-per-month over 24 (720 h = 30 days, 730 h = 30.42)."""
    return exact(i.hours_per_month) / HOURS_PER_DAY


def chats_per_month(i: Inputs) -> Fraction:
    return i.chats_per_day * days_per_month(i)


def api_cost_per_chat(i: Inputs) -> Fraction:
    """USD per chat on the API, input tokens billed at the input price and output at the output price."""
    per_turn = (i.input_tokens_per_turn * exact(i.api_input_usd_per_million)
                + i.output_tokens_per_turn * exact(i.api_output_usd_per_million)) / PER_MILLION
    return per_turn * i.turns_per_chat


def api_usd_per_million_output_tokens_with_input(i: Inputs) -> Fraction:
    """The API's price per million output tokens once each output token carries its share of the input.

    Like for like with the self-hosted figure, whose GPU time already includes the prefill.
    """
    return api_cost_per_chat(i) / (i.turns_per_chat * i.output_tokens_per_turn) * PER_MILLION


def kv_bytes_per_token(i: Inputs) -> Fraction:
    """Bytes per token as stored: --kv-bytes-per-token is at 16 bits; an fp8 cache holds half."""
    return Fraction(i.kv_bytes_per_token) / (1 if i.kv_cache_dtype == "auto" else 2)


def kv_cache_tokens(i: Inputs) -> int:
    """Tokens of KV cache one replica holds: every GPU's usable memory less its overhead, less the weights.

    With tensor parallelism the weights are split over the replica's GPUs and each GPU keeps its own
    overhead, so the cache is N x (G x F - O) - W. Zero when that is not positive (vLLM would not start).
    """
    usable = exact(i.gpu_memory_gb) * exact(i.gpu_memory_utilization) - exact(i.overhead_gb)
    free_gb = i.gpus_per_replica * usable - exact(i.weights_gb)
    return max(0, math.floor(free_gb * BYTES_PER_GB / kv_bytes_per_token(i)))


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
    sequences = kv_tokens // i.context_tokens
    batch = batch_hours(i.batch_output_tokens, i.throughput)
    return {
        "contract": 4,
        "inputs": i.to_dict(),
        "peak_output_tokens_per_s": _num(peak),
        "per_stream_output_tokens_per_s": _num(exact(i.throughput) / i.concurrency),
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
        "chats_per_month": _num(month_chats),
        "api": {"cost_per_chat_usd": _num(api_chat),
                "list_usd_per_million_output_tokens": _num(exact(i.api_output_usd_per_million)),
                "usd_per_million_output_tokens_with_input": _num(api_usd_per_million_output_tokens_with_input(i)),
                "monthly_usd": _num(api_chat * month_chats)},
        "kv_cache": {"bytes_per_token": _num(kv_bytes_per_token(i)), "tokens": kv_tokens,
                     "sequences_at_context": sequences, "holds_concurrency": sequences >= i.concurrency},
        "batch_hours": None if batch is None else _num(batch),
    }
