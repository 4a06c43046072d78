"""Shared helpers for the kit's tests. Servers come from the `fake_server` fixture (the plugin)."""

from __future__ import annotations

import json
import signal
from collections.abc import Callable
from typing import Any, TypeAlias

import fast_tier
import httpx
import pod_results
import pytest
import sampling
from api_client import SSEDecoder
from prometheus_client.parser import text_string_to_metric_families

from fake_server import RunningServer

# What the `fake_server` fixture (fake_server/pytest_plugin.py) gives a test: start a server with `serve`'s keywords.
FakeServer: TypeAlias = Callable[..., RunningServer]

# A test run started in the background by a non-interactive shell (`make test &`, some CI runners)
# inherits SIGINT ignored, and so would every server and grader a test starts: Python keeps an
# inherited "ignore", so the tests of Ctrl-C would test nothing and fail. Give children the default.
if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
    signal.signal(signal.SIGINT, signal.default_int_handler)


# The submissions kept as fixtures carry their own suites: the grade runs those as the candidate's, on its own
# terms; collected here they would be run again beside the kit's, with the kit's load and timeouts.
collect_ignore = ["fixtures"]


def pytest_configure(config: pytest.Config) -> None:
    config.pluginmanager.register(sampling, "sampling")  # a sample of the longest tests (tests/sampling.py)
    config.pluginmanager.register(pod_results, "pod_results")  # make test-image's last result (tests/pod_results.py)
    config.pluginmanager.register(fast_tier, "fast_tier")  # what make test-fast leaves out (tests/fast_tier.py)


# The longest test files, longest first (as `make test` lists its slowest tests).
LONGEST = (
    "test_selftest.py",
    "test_selftest_correct.py",
    "test_bundle.py",
    "test_time_to_verdict.py",
    "test_determinism.py",
    "test_grade_many.py",
    "test_replay.py",
)


@pytest.hookimpl(trylast=True)
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Longest first, a file at a time: the longest files, then other files with slow tests, then the rest,
    each file's tests together and in their order. With several workers (`-n`, `--no-loadscope-reorder`),
    a long test started last would be the whole run's tail."""
    rank: dict[object, int] = {}
    for item in items:
        name = item.path.name
        own = LONGEST.index(name) if name in LONGEST else len(LONGEST) + (0 if item.get_closest_marker("slow") else 1)
        rank[item.path] = min(rank.get(item.path, own), own)
    items.sort(key=lambda item: rank[item.path])


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    """Name what the live selftest drew (tests/kit/test_selftest.py, test_selftest_correct.py), so a failure
    elsewhere can be drawn again."""
    for report in terminalreporter.stats.get("passed", []) + terminalreporter.stats.get("failed", []):
        for key, value in getattr(report, "user_properties", ()):
            if key in ("selftest_sample", "selftest_correct") and report.when == "call":
                terminalreporter.write_line(str(value))


def sse_events(raw: bytes) -> list[str]:
    """The data of each complete event of an SSE body, in order (the stub client's decoder)."""
    return SSEDecoder().feed(raw.decode())


def chat_body(content: str = "Hello", max_tokens: int | None = 8, stream: bool = True, **extra: Any) -> dict[str, Any]:
    body: dict[str, Any] = {"model": "fake-model", "messages": [{"role": "user", "content": content}], "stream": stream}
    if max_tokens is not None:
        body["max_tokens"] = max_tokens
    body.update(extra)
    return body


def stream_chat(base_url: str, **kwargs: Any) -> tuple[int, list[str]]:
    with httpx.stream("POST", base_url + "/v1/chat/completions", json=chat_body(**kwargs), timeout=30) as r:
        return r.status_code, sse_events(r.read())


def json_events(events: list[str]) -> list[dict[str, Any]]:
    return [json.loads(e) for e in events if e != "[DONE]"]


def metric_values(text: str) -> dict[str, float]:
    """name{label=value,...} -> value for every sample, parsed by prometheus-client's own parser."""
    out: dict[str, float] = {}
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            labels = ",".join(f"{k}={v}" for k, v in sorted(sample.labels.items()))
            out[f"{sample.name}{{{labels}}}"] = sample.value
    return out
