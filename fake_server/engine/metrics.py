"""Prometheus metrics with vLLM's names, kept as plain numbers and exported at scrape time.

The engine updates counters and histograms in its own step loop without locks (one event loop
owns them), and a prometheus-client collector turns them into families when `/metrics` is read.
Gauges are not stored at all: they are read off the engine's state at scrape time, so they cannot
drift from it. vLLM exports counters with a `_total` suffix and labels every series `model_name`.
"""

from __future__ import annotations

from bisect import bisect_left
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from typing import Protocol

from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.core import (
    CounterMetricFamily,
    GaugeMetricFamily,
    HistogramMetricFamily,
    InfoMetricFamily,
    Metric,
)
from prometheus_client.registry import Collector

from fake_server.engine.events import Finished, Lifecycle, Preempted, PrefillDone, Scheduled, Tokens

__all__ = ["EngineMetrics", "Histogram", "MeteredEngine", "render"]


class _KV(Protocol):
    def usage(self) -> float: ...


class MeteredEngine(Protocol):
    """What the exporter reads off an engine at scrape time."""

    @property
    def num_running(self) -> int: ...

    @property
    def num_waiting(self) -> int: ...

    @property
    def kv(self) -> _KV: ...

    @property
    def metrics(self) -> EngineMetrics: ...

    @property
    def step_timer(self) -> str: ...


# Buckets as vLLM declares them (seconds, or tokens for the size histograms).
TTFT_BUCKETS = (
    0.001,
    0.005,
    0.01,
    0.02,
    0.04,
    0.06,
    0.08,
    0.1,
    0.25,
    0.5,
    0.75,
    1.0,
    2.5,
    5.0,
    7.5,
    10.0,
    20.0,
    40.0,
    80.0,
    160.0,
    640.0,
    2560.0,
)
ITL_BUCKETS = (
    0.01,
    0.025,
    0.05,
    0.075,
    0.1,
    0.15,
    0.2,
    0.3,
    0.4,
    0.5,
    0.75,
    1.0,
    2.5,
    5.0,
    7.5,
    10.0,
    20.0,
    40.0,
    80.0,
)
LATENCY_BUCKETS = (
    0.3,
    0.5,
    0.8,
    1.0,
    1.5,
    2.0,
    2.5,
    5.0,
    10.0,
    15.0,
    20.0,
    30.0,
    40.0,
    50.0,
    60.0,
    120.0,
    240.0,
    480.0,
    960.0,
    1920.0,
    7680.0,
)
TOKEN_BUCKETS = (1, 2, 5, 10, 20, 50, 100, 200, 500, 1000, 2000, 5000, 10000, 20000, 50000, 100000)
LAG_BUCKETS = (0.0005, 0.001, 0.002, 0.005, 0.01, 0.02, 0.05, 0.1, 0.5, 1.0)


class Histogram:
    """Cumulative-bucket histogram that can take many equal observations at once."""

    __slots__ = ("bounds", "counts", "n", "total")

    def __init__(self, bounds: Sequence[float]) -> None:
        self.bounds = tuple(bounds)
        self.counts = [0] * (len(self.bounds) + 1)
        self.total = 0.0
        self.n = 0

    def observe(self, value: float, times: int = 1) -> None:
        self.counts[bisect_left(self.bounds, value)] += times
        self.total += value * times
        self.n += times

    def buckets(self) -> list[tuple[str, float]]:
        out: list[tuple[str, float]] = []
        running = 0
        for bound, count in zip(self.bounds, self.counts):
            running += count
            out.append((repr(float(bound)), running))
        out.append(("+Inf", self.n))
        return out


class EngineMetrics:
    """The numbers one model's engine reports."""

    def __init__(self) -> None:
        self.prompt_tokens = 0
        self.generation_tokens = 0
        self.preemptions = 0
        self.prefix_queries = 0
        self.prefix_hits = 0
        self.success: Counter[str] = Counter()
        self.ttft = Histogram(TTFT_BUCKETS)
        self.itl = Histogram(ITL_BUCKETS)
        self.e2e = Histogram(LATENCY_BUCKETS)
        self.queue_time = Histogram(LATENCY_BUCKETS)
        self.prefill_time = Histogram(LATENCY_BUCKETS)
        self.decode_time = Histogram(LATENCY_BUCKETS)
        self.request_prompt_tokens = Histogram(TOKEN_BUCKETS)
        self.request_generation_tokens = Histogram(TOKEN_BUCKETS)
        self.step_lag = Histogram(LAG_BUCKETS)

    def on_event(self, event: Lifecycle) -> None:
        """Count what the engine reports about a sequence (the per-token path comes first)."""
        seq = event.seq
        if isinstance(event, Tokens):
            now = event.now
            if seq.first_token_mono is None:
                seq.first_token_mono = now
                self.ttft.observe(now - seq.arrival_mono)
                self.prompt_tokens += seq.num_prompt  # counted once, when prefill first completes, as vLLM
            elif seq.last_token_mono is not None:
                self.itl.observe(now - seq.last_token_mono)
            seq.last_token_mono = now
            self.generation_tokens += event.generated
        elif isinstance(event, Scheduled):
            self.prefix_queries += seq.num_prompt
            self.prefix_hits += event.cached_tokens
            self.queue_time.observe(event.now - seq.arrival_mono)
        elif isinstance(event, PrefillDone):
            if seq.scheduled_mono is not None:
                self.prefill_time.observe(event.now - seq.scheduled_mono)
        elif isinstance(event, Preempted):
            self.preemptions += 1
        elif isinstance(event, Finished):
            now = event.now
            self.success[event.reason] += 1
            self.e2e.observe(now - seq.arrival_mono)
            self.request_prompt_tokens.observe(seq.num_prompt)
            self.request_generation_tokens.observe(seq.output)
            if seq.first_token_mono is not None:
                self.decode_time.observe(now - seq.first_token_mono)


_HISTOGRAMS = (
    ("vllm:time_to_first_token_seconds", "ttft", "Histogram of time to first token in seconds."),
    ("vllm:inter_token_latency_seconds", "itl", "Histogram of inter-token latency in seconds."),
    ("vllm:e2e_request_latency_seconds", "e2e", "Histogram of end-to-end request latency in seconds."),
    ("vllm:request_queue_time_seconds", "queue_time", "Histogram of time spent waiting in the queue."),
    ("vllm:request_prefill_time_seconds", "prefill_time", "Histogram of time spent in prefill."),
    ("vllm:request_decode_time_seconds", "decode_time", "Histogram of time spent in decode."),
    ("vllm:request_prompt_tokens", "request_prompt_tokens", "Number of prefill tokens processed."),
    ("vllm:request_generation_tokens", "request_generation_tokens", "Number of generation tokens processed."),
    (
        "fake_server:step_lag_seconds",
        "step_lag",
        "How late engine steps ended against the set timing (the fake server's own honesty figure).",
    ),
)
_COUNTERS = (
    ("vllm:prompt_tokens", "prompt_tokens", "Number of prefill tokens processed."),
    ("vllm:generation_tokens", "generation_tokens", "Number of generation tokens processed."),
    ("vllm:num_preemptions", "preemptions", "Cumulative number of preemptions from the engine."),
    ("vllm:prefix_cache_queries", "prefix_queries", "Prefix cache queries, in terms of number of queried tokens."),
    ("vllm:prefix_cache_hits", "prefix_hits", "Prefix cache hits, in terms of number of cached tokens."),
)


class _EngineCollector(Collector):
    def __init__(self, engines: Callable[[], Iterable[tuple[str, MeteredEngine]]]) -> None:
        self._engines = engines

    def collect(self) -> Iterable[Metric]:
        engines = list(self._engines())
        running = GaugeMetricFamily(
            "vllm:num_requests_running", "Number of requests in model execution batches.", labels=["model_name"]
        )
        waiting = GaugeMetricFamily(
            "vllm:num_requests_waiting", "Number of requests waiting to be processed.", labels=["model_name"]
        )
        kv = GaugeMetricFamily(
            "vllm:kv_cache_usage_perc", "KV-cache usage. 1 means 100 percent usage.", labels=["model_name"]
        )
        for name, engine in engines:
            running.add_metric([name], engine.num_running)
            waiting.add_metric([name], engine.num_waiting)
            kv.add_metric([name], engine.kv.usage())
        timer = InfoMetricFamily(
            "fake_server:step_timer",
            "What the engine's steps wait on: timerfd, kqueue or loop (the event loop's timer).",
            labels=["model_name"],
        )
        for name, engine in engines:
            timer.add_metric([name], {"timer": engine.step_timer})
        yield from (running, waiting, kv, timer)
        for metric, attr, doc in _COUNTERS:
            family = CounterMetricFamily(metric, doc, labels=["model_name"])
            for name, engine in engines:
                family.add_metric([name], getattr(engine.metrics, attr))
            yield family
        success = CounterMetricFamily(
            "vllm:request_success",
            "Count of successfully processed requests.",
            labels=["model_name", "finished_reason"],
        )
        for name, engine in engines:
            for reason in ("stop", "length", "abort", "error"):
                success.add_metric([name, reason], engine.metrics.success[reason])
        yield success
        for metric, attr, doc in _HISTOGRAMS:
            histograms = HistogramMetricFamily(metric, doc, labels=["model_name"])
            for name, engine in engines:
                h: Histogram = getattr(engine.metrics, attr)
                histograms.add_metric([name], h.buckets(), h.total)
            yield histograms


def make_registry(engines: Callable[[], Iterable[tuple[str, MeteredEngine]]]) -> CollectorRegistry:
    registry = CollectorRegistry(auto_describe=False)
    registry.register(_EngineCollector(engines))
    return registry


def render(registry: CollectorRegistry) -> bytes:
    return generate_latest(registry)
