"""The sizing script's inputs: one table that defines each flag, its type, its default and its help.

Every price, utilisation, throughput and load is a flag, so the arithmetic never hides a constant.
The click options and the `Inputs` record are both built from `FLAGS`, so a default lives in one place.
Numbers are checked at the boundary (finite, in range) and the error names the flag.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import click

__all__ = ["FLAGS", "KV_CACHE_DTYPES", "Flag", "Inputs", "Number"]

#: vLLM's --kv-cache-dtype values: "auto" stores the cache in the model's 16-bit dtype, the rest in 8 bits.
KV_CACHE_DTYPES = ("auto", "fp8", "fp8_e4m3", "fp8_e5m2")


class Number(click.ParamType):
    """A finite float in an interval. click's FloatRange lets "nan" and "inf" through; this does not."""

    name = "number"

    def __init__(self, low: float | None = None, high: float | None = None, *,
                 low_open: bool = False, high_open: bool = False) -> None:
        self.low, self.high, self.low_open, self.high_open = low, high, low_open, high_open

    def _range(self) -> str:
        parts = []
        if self.low is not None:
            parts.append(f"{'>' if self.low_open else '>='} {self.low:g}")
        if self.high is not None:
            parts.append(f"{'<' if self.high_open else '<='} {self.high:g}")
        return " and ".join(parts) or "finite"

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> float:
        if isinstance(value, float):
            number = value
        else:
            try:
                number = float(str(value).strip())
            except ValueError:
                self.fail(f"{value!r} is not a number", param, ctx)
        if not math.isfinite(number):
            self.fail(f"{value!r} is not a finite number", param, ctx)
        too_low = self.low is not None and (number <= self.low if self.low_open else number < self.low)
        too_high = self.high is not None and (number >= self.high if self.high_open else number > self.high)
        if too_low or too_high:
            self.fail(f"{value!r} must be {self._range()}", param, ctx)
        return number


def _count(low: int) -> click.IntRange:
    return click.IntRange(min=low)


@dataclass(frozen=True)
class Flag:
    """One input flag. `default` None with `required` False means the input is optional (null)."""

    name: str                      # the Inputs field and the JSON key; the flag is --name-with-dashes
    kind: click.ParamType
    help: str
    metavar: str
    required: bool = True
    default: float | int | str | None = None
    multiple: bool = False

    @property
    def option(self) -> str:
        return "--" + self.name.replace("_", "-")


_POSITIVE = Number(0, low_open=True)
_NON_NEGATIVE = Number(0)
_FRACTION = Number(0, 1, low_open=True)

FLAGS: tuple[Flag, ...] = (
    Flag("throughput", _POSITIVE, "Output tokens/s of one replica at the operating point (aggregate over "
         "--concurrency streams).", "TOK_S"),
    Flag("concurrency", _count(1), "Streams in flight on one replica at that operating point (the measured "
         "concurrency, chosen for the TTFT target).", "C"),
    Flag("gpu_hour_usd", _POSITIVE, "Price of one GPU-hour in USD; repeat for several prices.", "PRICE",
         multiple=True),
    Flag("utilisation", _FRACTION, "Share of billed hours the replica is busy at that throughput, 0 < U <= 1; "
         "repeat for several.", "U", multiple=True),
    Flag("gpus_per_replica", _count(1), "GPUs one replica holds.", "N", required=False, default=1),
    Flag("chats_per_day", _count(1), "Chats per day.", "N"),
    Flag("turns_per_chat", _count(1), "Turns (requests) per chat.", "N"),
    Flag("output_tokens_per_turn", _count(1), "Output tokens per turn.", "N"),
    Flag("input_tokens_per_turn", _count(0), "Input (prompt) tokens per turn, history included.", "N"),
    Flag("active_hours", Number(0, 24, low_open=True), "Hours per day in which chats arrive, 0 < H <= 24.", "H"),
    Flag("peak_factor", Number(1), "Busiest hour's rate over the average active hour (>= 1 by definition).", "F"),
    Flag("min_replicas", _count(1), "Fewest replicas whatever the load, for availability.", "N",
         required=False, default=2),
    Flag("hours_per_month", Number(0, 744, low_open=True), "Billed hours per month per GPU.", "H",
         required=False, default=720),
    Flag("api_input_usd_per_million", _NON_NEGATIVE, "API price per million input tokens, USD.", "P"),
    Flag("api_output_usd_per_million", _NON_NEGATIVE, "API price per million output tokens, USD.", "P"),
    Flag("gpu_memory_gb", _POSITIVE, "Memory of one GPU in GB (1 GB = 1e9 bytes).", "G"),
    Flag("gpu_memory_utilization", _FRACTION, "vLLM's --gpu-memory-utilization.", "F",
         required=False, default=0.92),
    Flag("weights_gb", _NON_NEGATIVE, "Model weights in GB on one replica (all its GPUs together).", "W"),
    Flag("overhead_gb", _NON_NEGATIVE, "Activations, CUDA graphs and other non-KV memory in GB, on each GPU.", "O"),
    Flag("kv_bytes_per_token", _count(1), "KV-cache bytes per token at 16 bits (all layers, K and V).", "B"),
    Flag("kv_cache_dtype", click.Choice(KV_CACHE_DTYPES), "vLLM's --kv-cache-dtype: auto keeps 16 bits, "
         "an fp8 dtype halves the bytes per token.", "DTYPE", required=False, default="auto"),
    Flag("context_tokens", _count(1), "Tokens one sequence may hold (the deployment's --max-model-len).", "T"),
    Flag("batch_output_tokens", _count(0), "Output tokens of a batch job, for its hours on one replica.", "N",
         required=False),
)


@dataclass(frozen=True)
class Inputs:
    """Every value the arithmetic uses, as given on the command line."""

    throughput: float
    concurrency: int
    gpu_hour_usd: tuple[float, ...]
    utilisation: tuple[float, ...]
    gpus_per_replica: int
    chats_per_day: int
    turns_per_chat: int
    output_tokens_per_turn: int
    input_tokens_per_turn: int
    active_hours: float
    peak_factor: float
    min_replicas: int
    hours_per_month: float
    api_input_usd_per_million: float
    api_output_usd_per_million: float
    gpu_memory_gb: float
    gpu_memory_utilization: float
    weights_gb: float
    overhead_gb: float
    kv_bytes_per_token: int
    kv_cache_dtype: str
    context_tokens: int
    batch_output_tokens: int | None

    def to_dict(self) -> dict[str, Any]:
        """The `inputs` echo of the output: lists for repeated flags, null for an absent optional one."""
        return {flag.name: list(getattr(self, flag.name)) if flag.multiple else getattr(self, flag.name)
                for flag in FLAGS}
