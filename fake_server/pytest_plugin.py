"""pytest plugin: the `fake_server` fixture, for the kit's tests and candidates' own.

    def test_queueing(fake_server):
        server = fake_server(max_num_seqs=2, token_rate=100)     # or fake_server(scenario="slot-saturation")
        client = openai.OpenAI(base_url=server.openai_base_url, api_key="x")

Each call starts a server in a background thread on a free loopback port; all of them stop
when the test ends. `fake_fleet("fleet.yaml")` starts a whole fleet the same way (on free ports)
and returns its servers by name. The keywords are `serve`'s; `fake-server fixture` lists every one
of them from the code (fake_server/manual.py).
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from fake_server.hosting.launch import RunningServer, serve, serve_fleet


@pytest.fixture
def fake_server() -> Iterator[Callable[..., RunningServer]]:
    with contextlib.ExitStack() as stack:

        def start(**kwargs: Any) -> RunningServer:
            return stack.enter_context(serve(**kwargs))

        yield start


@pytest.fixture
def fake_fleet() -> Iterator[Callable[..., dict[str, RunningServer]]]:
    with contextlib.ExitStack() as stack:

        def start(fleet: Any) -> dict[str, RunningServer]:
            return stack.enter_context(serve_fleet(fleet, any_port=True))

        yield start
