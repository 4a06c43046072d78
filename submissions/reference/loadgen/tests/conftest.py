"""Fixtures: run the load generator in-process against a fake server (the `fake_server` fixture
comes from the fake_server package's pytest plugin)."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

import pytest

from loadgen import LoadConfig, RunResult, run_load


@pytest.fixture
def load() -> Callable[..., RunResult]:
    """`load(server, requests=8, concurrency=8, ...)`: one run of the load generator, its result."""

    def run(server: Any, requests: int = 8, concurrency: int = 8, prompt_tokens: int = 16, max_tokens: int = 32,
            base_url: str | None = None, **options: Any) -> RunResult:
        config = LoadConfig(base_url=base_url or server.openai_base_url, model="fake-model", requests=requests,
                            concurrency=concurrency, prompt_tokens=prompt_tokens, max_tokens=max_tokens, **options)
        return asyncio.run(run_load(config))

    return run



def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Tests of pure functions first, those that stream from a fake server after (in their own order): a
    broken percentile or parser fails in the first second, not after the slower end-to-end tests."""
    items.sort(key=lambda item: "fake_server" in getattr(item, "fixturenames", ()))
