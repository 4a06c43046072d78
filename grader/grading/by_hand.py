"""Reproducing a run without the grader: the commands `grader replay` prints, and `--serve`.

A replay writes each fake server's settings (the scenario's, or a gateway case's with its faults) and
seed into files beside it, and prints the `fake-server serve` lines that load them, the candidate's
own command line with the local URLs, and for the gateway a `curl` of the case's request. `--serve`
starts the same servers in this process and keeps them up until Ctrl-C.
"""

from __future__ import annotations

import json
import shlex
import tempfile
from collections.abc import Callable
from contextlib import ExitStack
from pathlib import Path
from typing import Any

import fake_server
from grader.contract import Submission
from grader.records.gateway import GatewayRun
from grader.records.loadgen import LoadgenRun
from grader.rubric import Criterion, Scenario
from grader.rubric.gateway_plan import Case, GatewayPlan, body_for
from grader.running.gateway import gateway_config
from grader.running.loadgen import loadgen_argv

__all__ = [
    "PORTS",
    "gateway_by_hand",
    "loadgen_by_hand",
    "other_by_hand",
    "serve_gateway",
    "serve_loadgen",
]

#: Ports for reproducing by hand: the load generator's server, then the gateway's local and API servers.
PORTS = {"loadgen": 8000, "local": 8001, "api": 8002}


def loadgen_by_hand(runs: list[LoadgenRun], submission: Path, folder: Path) -> list[str]:
    """Per scenario run: its settings file, the fake server serving it, the candidate's command against it."""
    folder.mkdir(parents=True, exist_ok=True)
    out = []
    for run in runs:
        path = folder / f"{run.scenario.name}.yaml"
        settings = {
            "description": run.scenario.description,
            **run.scenario.server,
            "seed": run.seed,
        }
        path.write_text(json.dumps(settings, indent=2) + "\n", encoding="utf-8")  # JSON is YAML
        base = f"http://127.0.0.1:{PORTS['loadgen']}"
        argv = _after_url(run.argv, base + "/v1")
        out += [
            f"# {run.scenario.name}: the fake server, then your load generator (from your folder)",
            f"fake-server serve --scenario {shlex.quote(str(path))} --port {PORTS['loadgen']}",
            f"cd {shlex.quote(str(submission))} && {shlex.join(argv)}",
        ]
    return out


def _after_url(argv: list[str], url: str) -> list[str]:
    """The command line as the grader ran it, with the fake server's URL and results file made local."""
    out = list(argv)
    for i, arg in enumerate(out[:-1]):
        if arg == "--base-url":
            out[i + 1] = url
        if arg == "--output":
            out[i + 1] = "results.json"
    return out


def _server_file(
    folder: Path,
    name: str,
    settings: dict[str, Any],
    faults: tuple[dict[str, Any], ...],
    extra: dict[str, Any],
    seed: int,
) -> Path:
    path = folder / f"{name}.yaml"
    data = {**settings, **extra, "seed": seed}
    if faults:
        data["faults"] = list(faults)
    path.write_text(json.dumps(data, indent=2) + "\n", encoding="utf-8")
    return path


def gateway_by_hand(run: GatewayRun, submission: Path, folder: Path, failing: list[str]) -> list[str]:
    """The first failing single-request case (or a healthy one): both servers with its faults, the gateway's
    config and command, and the request."""
    folder.mkdir(parents=True, exist_ok=True)
    plan = run.plan
    name = next((n for n in failing if run.cases[n].case.kind == "one"), None)
    case = run.cases[name].case if name else Case("healthy", "no fault")
    local = _server_file(
        folder,
        "gateway-local",
        plan.local_server,
        case.local_faults,
        case.local_settings,
        run.seed,
    )
    api = _server_file(
        folder,
        "gateway-api",
        plan.api_server,
        case.api_faults,
        case.api_settings,
        run.seed + 1,
    )
    config = gateway_config(plan, _urls(PORTS["local"]), _urls(PORTS["api"]))
    config_path = folder / "gateway-config.yaml"
    config_path.write_text(json.dumps(config, indent=2) + "\n", encoding="utf-8")
    command = _gateway_argv(run.argv, config_path, plan.port)
    body = body_for(plan, case, case.send, max_tokens=None)
    return [
        f"# case {case.name}: {case.what}",
        f"fake-server serve --scenario {shlex.quote(str(local))} --port {PORTS['local']}",
        f"fake-server serve --scenario {shlex.quote(str(api))} --port {PORTS['api']}",
        f"cd {shlex.quote(str(submission))} && {shlex.join(command)}",
        (
            f"curl -sN http://127.0.0.1:{plan.port}/v1/chat/completions -H 'content-type: application/json' "
            f"-d {shlex.quote(json.dumps(body))}"
        ),
    ]


def _urls(port: int) -> dict[str, str]:
    return {
        "url": f"http://127.0.0.1:{port}",
        "base_url": f"http://127.0.0.1:{port}/v1",
    }


def _gateway_argv(argv: list[str], config: Path, port: int) -> list[str]:
    out = list(argv)
    for i, arg in enumerate(out[:-1]):
        if arg == "--config":
            out[i + 1] = str(config)
        if arg == "--port":
            out[i + 1] = str(port)
    return out


def other_by_hand(criterion: Criterion, records: list[dict[str, Any]]) -> list[str]:
    """The untimed sections' own commands: sizing with each failing input set's flags, the tests, the checkers."""
    record = records[0] if records else {}
    if criterion.deliverable == "sizing":
        failing = [r for r in record.get("sets", []) if r.get("problem")] or record.get("sets", [])[:1]
        return [shlex.join(["<your sizing.command>", *_flags(r["flags"])]) for r in failing]
    if criterion.deliverable == "tests":
        return ["<your tests.command>  # the grader also runs it with broken variants swapped in (docs/grading.md)"]
    if criterion.deliverable == "memo":
        return [f"grader memo {shlex.quote(str(record.get('memo_file', 'memo/MEMO.md')))}"]
    return ["grader manifests <the kit's chart> --values <your values file>  # or your rendered manifests"]


def _flags(flags: dict[str, Any]) -> list[str]:
    from grader.rubric.sizing_plan import argv

    return argv(flags)


def serve_loadgen(
    stack: ExitStack,
    name: str,
    scenario: Scenario,
    sub: Submission,
    submission: Path,
    seed: int,
    echo: Callable[[str], None],
) -> None:
    """A scenario's fake server, up until `stack` closes; prints its URL and the command to run against it."""
    server = stack.enter_context(fake_server.serve(**{**scenario.server, "seed": seed}))
    argv = loadgen_argv(sub, scenario, server.openai_base_url, "results.json")
    echo(f"scenario {name}: {scenario.description}")
    echo(f"fake server: {server.openai_base_url}")
    echo(f"run, from {submission}: {shlex.join(argv)}")


def serve_gateway(
    stack: ExitStack,
    plan: GatewayPlan,
    case: Case,
    sub: Submission,
    submission: Path,
    seed: int,
    echo: Callable[[str], None],
) -> None:
    """A gateway case's two fake servers with its faults, up until `stack` closes; prints the URLs, a config
    file naming them, the gateway's command and the request."""
    local = stack.enter_context(
        fake_server.serve(
            **{
                **plan.local_server,
                **case.local_settings,
                "seed": seed,
                "faults": list(case.local_faults),
            }
        )
    )
    api = stack.enter_context(
        fake_server.serve(
            **{
                **plan.api_server,
                **case.api_settings,
                "seed": seed + 1,
                "faults": list(case.api_faults),
            }
        )
    )
    config = gateway_config(
        plan,
        {"url": local.base_url, "base_url": local.openai_base_url},
        {"url": api.base_url, "base_url": api.openai_base_url},
    )
    folder = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="grader-serve-")))
    path = folder / "gateway-config.yaml"
    path.write_text(json.dumps(config, indent=2) + "\n", encoding="utf-8")
    argv = sub.command("gateway") + ["--config", str(path), "--port", str(plan.port)]
    body = body_for(plan, case, case.send, max_tokens=None)
    echo(f"case {case.name}: {case.what}")
    echo(f"local fake server: {local.openai_base_url}")
    echo(f"API fake server: {api.openai_base_url}")
    echo(f"gateway config: {path}")
    echo(f"run, from {submission}: {shlex.join(argv)}")
    echo(
        f"then: curl -sN http://127.0.0.1:{plan.port}/v1/chat/completions -H 'content-type: application/json' "
        f"-d {shlex.quote(json.dumps(body))}"
    )
