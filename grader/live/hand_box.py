"""A box on this machine's loopback for a live exercise run by hand (`grader live --by-hand`).

The grade's runs are made in a sandbox whose network the candidate cannot reach. In an interview the
candidate may rather run their own command in their own terminal (a debugger, their own flags, their own
editor at hand). This box offers the sandbox's operations (`Box`, grader/sandbox/box_api.py) outside it: the
fake servers start in this process on free loopback ports (the harness's own ServerPool), the grader's
requests go out through the harness's own loopback client (netops), and where the sandbox would start the
candidate's command it prints the command and waits for the candidate to start it, within the exercise's
time box. So the run, its record and its judgement are the grade's own; only who starts the command
differs, and the report says so (UNSANDBOXED: run by hand).
"""

from __future__ import annotations

import shlex
import shutil
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, Self

from grader.sandbox import RunResult
from grader.sandbox.netops import http_many, http_request, wait_port
from grader.sandbox.servers import ServerPool
from grader.shared.kit_files import stub_client

__all__ = ["EXIT_FILE", "NOT_CAPTURED", "HandBox"]

EXIT_FILE = "exit-status"  # where the printed command line writes its exit status, so the kit knows it ended
NOT_CAPTURED = "(run by hand: its output went to the candidate's terminal)"
_POLL_S = 0.1


class HandBox:
    """The sandbox's operations on this machine, the candidate's commands started by the candidate.

    `folder` is the run's own folder (config files and results go there), `submission` the candidate's
    folder (their commands run from it), `wait_s` how long to wait for the candidate (the time box)."""

    def __init__(self, submission: Path, folder: Path, echo: Callable[[str], None], *, wait_s: float) -> None:
        self.submission, self.folder, self.echo, self.wait_s = submission.resolve(), folder.resolve(), echo, wait_s
        self.folder.mkdir(parents=True, exist_ok=True)
        self.servers = ServerPool()
        # the stub API client alone on PYTHONPATH, as the sandbox gives it to every command
        self.stub = self.folder / "stub"
        self.stub.mkdir(exist_ok=True)
        shutil.copy2(stub_client(), self.stub / "api_client.py")
        self.isolated, self.note = False, "UNSANDBOXED: run by hand by the candidate, outside the sandbox"

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.servers.close()

    # -- the fake servers, in this process ----------------------------------------------------------

    def serve(self, name: str, **settings: Any) -> dict[str, str]:
        urls = self.servers.serve(name, settings)
        self.echo(f"fake server {name}: {urls['base_url']}")
        return urls

    def configure(self, name: str, **settings: Any) -> None:
        self.servers.configure(name, settings)

    def set_faults(self, name: str, faults: list[dict[str, Any]]) -> None:
        self.servers.set_faults(name, faults)

    def reset(self, name: str) -> None:
        self.servers.reset(name)

    def stop_server(self, name: str) -> None:
        self.servers.stop(name)

    def ledger(self, name: str, settle: float = 2.0) -> list[dict[str, Any]]:
        return self.servers.ledger(name, settle)

    def endpoint_calls(self, name: str, endpoint: str, since: float = 0.0) -> list[dict[str, Any]]:
        """The named server's /health or /tokenize answers after Unix time `since`, as the sandbox's box gives them."""
        return self.servers.endpoint_calls(name, endpoint, since)

    def hold_port(self, port: int) -> None:
        """A port that takes no connection needs the sandbox's own network: no live exercise asks for it by hand."""
        raise ValueError(f"hold_port {port}: a held port is made only inside the sandbox; run this exercise there")

    # -- the grader's own requests, on loopback ----------------------------------------------------------

    def http(
        self, method: str, url: str, *, json: Any = None, stream: bool = False, timeout_s: float = 30.0
    ) -> dict[str, Any]:
        return http_request(method, url, json=json, stream=stream, timeout_s=timeout_s)

    def http_many(self, requests: list[dict[str, Any]], *, timeout_s: float = 30.0) -> list[dict[str, Any]]:
        return http_many(requests, timeout_s=timeout_s)

    def wait_port(self, port: int, timeout_s: float = 10.0, *, handle: str | None = None) -> bool:
        """The candidate starts their gateway by hand: the time box, not the grade's start limit, is the wait."""
        self.echo(f"waiting for your gateway on 127.0.0.1:{port} (at most {self.wait_s:.0f} s) ...")
        return bool(wait_port(port, max(timeout_s, self.wait_s))["open"])

    def write_file(self, name: str, text: str) -> str:
        path = self.folder / Path(name).name
        path.write_text(text, encoding="utf-8")
        return str(path)

    # -- the candidate's commands: printed, then waited for -----------------------------------------------

    def _from_folder(self, argv: list[str]) -> str:
        """The command line to type: from the candidate's folder, the stub client importable, as in the sandbox."""
        path = f"PYTHONPATH={shlex.quote(str(self.stub))}"
        return f"cd {shlex.quote(str(self.submission))} && {path} {shlex.join(argv)}"

    def spawn(self, argv: list[str], *, timeout_s: float = 600.0, **_: Any) -> str:
        """A long-running command (the gateway): printed for the candidate to start."""
        self.echo("start it now, from your folder:")
        self.echo(f"  {self._from_folder(argv)}")
        return "by-hand"

    def stop(self, handle: str) -> RunResult:
        self.echo("the exercise's requests are done: stop your gateway (Ctrl-C in its terminal)")
        return _result(None, NOT_CAPTURED, 0.0, {})

    def run(
        self,
        argv: list[str],
        *,
        timeout_s: float,
        env: dict[str, str] | None = None,
        inject: dict[str, str] | None = None,
        files_back: tuple[str, ...] | list[str] = (),
        cwd: str = "work",
        watch: dict[str, Any] | None = None,
    ) -> RunResult:
        """A command that runs to its end (the load generator): printed with its output files in this run's
        folder and a trailer that writes its exit status there; waited for until that status appears (a person
        runs it, so `timeout_s` and `watch` give way to the session's own wait)."""
        placed = {name: str(self.folder / Path(name).name) for name in files_back}
        command = [placed.get(arg, arg) for arg in argv]
        status = self.folder / EXIT_FILE
        status.unlink(missing_ok=True)
        self.echo("run it now, from your folder (the last part tells the kit it ended):")
        self.echo(f"  {self._from_folder(command)}; echo $? > {shlex.quote(str(status))}")
        started = time.monotonic()
        until = started + self.wait_s
        while time.monotonic() < until and not _written(status):
            time.sleep(_POLL_S)
        wall = time.monotonic() - started
        files = {name: _read(Path(path)) for name, path in placed.items()}
        if not _written(status):
            return _result(
                None, NOT_CAPTURED, wall, files, killed=f"not run: no exit status within {self.wait_s:.0f} s"
            )
        return _result(int(status.read_text().strip()), NOT_CAPTURED, wall, files)


def _written(path: Path) -> bool:
    try:
        return path.read_text().strip().lstrip("-").isdigit()
    except OSError:
        return False


def _read(path: Path) -> str | None:
    try:
        return path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return None


def _result(
    code: int | None, tail: str, wall: float, files: dict[str, str | None], killed: str | None = None
) -> RunResult:
    return RunResult(code, False, killed, tail, "", 0, 0, round(wall, 3), files)
