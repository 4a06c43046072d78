"""Running fake servers: in a background thread of this process, or as a subprocess.

Both hand back a `RunningServer` with the base URL, the ledger and the run-time controls, so a
test (the kit's, the grader's or a candidate's) does not care which it got. In-process is cheaper
to start; a subprocess keeps the server's CPU work off the test's interpreter, which matters when
the test itself measures time.
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from fake_server.hosting.fleet import fleet_settings
from fake_server.hosting.handle import AdminControls, LocalControls, RunningServer
from fake_server.hosting.host import ProcessHost, ThreadHost
from fake_server.hosting.server import bind, make_server, new_loop
from fake_server.scenarios import build_settings
from fake_server.settings import ServerSettings

__all__ = [
    "RunningServer",
    "bind",
    "build_settings",
    "ledger_lines",
    "make_server",
    "new_loop",
    "serve",
    "serve_fleet",
    "serve_subprocess",
]


@contextlib.contextmanager
def serve(
    settings: ServerSettings | None = None, *, scenario: str | Path | None = None, **overrides: Any
) -> Iterator[RunningServer]:
    """Run a fake server in a background thread for the duration of the `with` block.

    >>> with serve(max_num_seqs=2, token_rate=200) as server:
    ...     client = openai.OpenAI(base_url=server.openai_base_url, api_key="unused")
    """
    if settings is None:
        settings = build_settings(scenario, **{"port": 0, **overrides})
    with _in_thread([settings]) as (running,):
        yield running


@contextlib.contextmanager
def serve_fleet(fleet: str | Path | dict[str, Any], *, any_port: bool = False) -> Iterator[dict[str, RunningServer]]:
    """Run every server of a fleet (a fleet file or its mapping) on one background loop.

    `any_port=True` ignores the file's ports and takes free ones (for tests).
    """
    named = fleet_settings(fleet)
    if any_port:
        for settings in named.values():
            settings.port = 0
    with _in_thread(list(named.values())) as servers:
        yield dict(zip(named, servers))


@contextlib.contextmanager
def _in_thread(entries: list[ServerSettings]) -> Iterator[list[RunningServer]]:
    host = ThreadHost(entries)
    started = host.start()
    try:
        yield [RunningServer(url, LocalControls(control, host.loop), state=control.state) for url, control in started]
    finally:
        host.stop()


@contextlib.contextmanager
def serve_subprocess(
    *args: str, admin_token: str | None = None, env: dict[str, str] | None = None, log: str | Path | None = None
) -> Iterator[RunningServer]:
    """Run `fake-server serve ARGS --port 0 --admin` as a child process; yields once it answers.

    The child's stdout and stderr go to a file (`log`, kept; or a temporary one removed at the
    end), never to a pipe: a pipe nobody reads fills up after a few thousand warnings and then
    blocks the server. `RunningServer.log_text()` reads it; every control goes over `/admin/*`.

    >>> with serve_subprocess("--scenario", "slot-saturation") as server: ...
    """
    host = ProcessHost(args, admin_token=admin_token, env=env, log=log)
    try:
        base = host.start()
        yield RunningServer(base, AdminControls(base, token=admin_token), process=host.process, log_path=host.log_path)
    finally:
        host.stop()


def ledger_lines(path: str | Path) -> list[dict[str, Any]]:
    """Read a JSONL ledger file written with `--ledger`."""
    return [json.loads(line) for line in Path(path).read_text().splitlines() if line.strip()]
