"""`fake-server`: the command line. It parses, builds settings and calls the runner; nothing else.

Every engine and server setting is an option named after its field (`max_num_seqs` is
`--max-num-seqs`), generated from `fake_server.settings`, so a new setting is a new flag for free.
"""

from __future__ import annotations

import asyncio
import dataclasses
import gc
import re
import sys
import threading
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import click

from fake_server.scenarios import list_scenarios
from fake_server.settings import ServerSettings, SettingsError, model_fields, server_fields

if TYPE_CHECKING:
    from fake_server.http.control import ServerControl

__all__ = ["main"]


def _option_for(f: dataclasses.Field[Any]) -> Callable[[Any], Any]:
    kind = str(f.type).replace(" ", "")
    flag = "--" + f.name.replace("_", "-")
    help_text = f.metadata.get("help", "")
    default = f.default if f.default is not dataclasses.MISSING else None
    lo, hi = f.metadata.get("min"), f.metadata.get("max")
    if kind in ("int", "float") and (lo is not None or hi is not None):
        help_text += f"  [range: {_bound(lo)} to {_bound(hi)}]"
    if default is not None and kind != "bool":
        help_text += f"  [default: {default}]"
    if kind == "bool":
        return click.option(
            f"{flag}/--no-{flag[2:]}",
            f.name,
            default=None,
            help=f"{help_text}  [default: {'on' if default else 'off'}]",
        )
    if kind == "list[str]":
        return click.option(flag, f.name, multiple=True, help=help_text + "  (repeat for several)")
    choices = f.metadata.get("choices")
    if choices:
        choices = (*choices, *f.metadata.get("aliases", {}))  # former names are still accepted
    py_type: Any = click.Choice(choices) if choices else {"int": int, "float": float}.get(kind, str)
    return click.option(flag, f.name, type=py_type, default=None, help=help_text)


def _bound(value: float | None) -> str:
    if value is None:
        return "any"
    return f"{value:g}" if isinstance(value, float) else str(value)


def _name_flags(message: str, given: dict[str, Any]) -> str:
    """A settings error about a value given as a flag names the flag (`--token-rate`), not the field."""
    for key in given:
        flag = "--" + key.replace("_", "-")
        message = re.sub(rf"(?:(?:overrides|settings): )?`?\b{re.escape(key)}\b`?", f"`{flag}`", message)
    return message


def _name_server(message: str, fleet_file: str) -> str:
    """A port that cannot be bound names the fleet's server that wanted it."""
    from fake_server.hosting.fleet import fleet_settings

    match = re.search(r"cannot listen on \S+?:(\d+)", message)
    if match:
        names = [name for name, s in fleet_settings(fleet_file).items() if s.port == int(match.group(1))]
        if names:
            return f"{fleet_file}: servers.{names[0]}: {message}"
    return message


def _settings_options(command: Callable[..., Any]) -> Callable[..., Any]:
    for f in reversed(server_fields() + model_fields()):
        command = _option_for(f)(command)
    return command


@click.group(context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 110})
@click.version_option(package_name="serving-takehome-kit", prog_name="fake-server", message="%(prog)s %(version)s")
def main() -> None:
    """A settable fake OpenAI-compatible server that behaves like vLLM."""


@main.command()
@click.argument("model", required=False)
@click.option("--scenario", help="Built-in scenario name (see `fake-server scenarios`) or a YAML file.")
@_settings_options
def serve(model: str | None, scenario: str | None, **values: Any) -> None:
    """Serve MODEL (like `vllm serve MODEL`); flags override the scenario, which overrides defaults."""
    from fake_server.scenarios import build_settings

    given = {k: v for k, v in values.items() if v is not None and v != ()}
    if model and "served_model_name" not in given:
        given["served_model_name"] = [model]
    try:
        settings = build_settings(scenario, **given)
        _run(settings)
    except SettingsError as exc:
        raise click.UsageError(_name_flags(str(exc), given)) from None


def _run(settings: ServerSettings) -> None:
    from fake_server.hosting.server import bind, make_server, new_loop, url_for

    sock = bind(settings.host, settings.port)
    server, control = make_server(settings)
    names = ", ".join(control.state.engines)
    click.echo(f"fake-server ({settings.persona}; {_timers(control)}) serving {names} on {url_for(sock)}", nl=True)
    sys.stdout.flush()
    loop = new_loop()
    asyncio.set_event_loop(loop)
    # Everything alive now (modules, settings) lives as long as the process: keep it out of the
    # collector's full passes, which otherwise stall a busy server for tens of ms (bench/README.md).
    gc.freeze()
    # A full pass still walks every object of every request in flight (20-45 ms with 1,024
    # streams, every few seconds: a late step for every stream) and finds almost nothing, as
    # reference counting frees what requests leave. Consider one after 1,000 passes of the middle
    # generation instead of 10; the young generations are collected as before.
    young, middle, _ = gc.get_threshold()
    gc.set_threshold(young, middle, 1000)
    try:
        loop.run_until_complete(server.serve(sockets=[sock]))
    except KeyboardInterrupt:
        pass
    finally:
        loop.close()


def _timers(control: ServerControl) -> str:
    """`step timer: timerfd`, or each model's when they differ."""
    timers = {name: engine.step_timer for name, engine in control.state.named_engines()}
    if len(set(timers.values())) == 1:
        return f"step timer: {next(iter(timers.values()))}"
    return "step timers: " + ", ".join(f"{timer} for {name}" for name, timer in timers.items())


@main.command()
@click.argument("fleet_file", type=click.Path(dir_okay=False))
def fleet(fleet_file: str) -> None:
    """Serve every server of FLEET_FILE (local replicas and APIs) until Ctrl-C."""
    from fake_server.hosting.launch import serve_fleet

    try:
        with serve_fleet(fleet_file) as servers:
            for name, server in servers.items():
                state = server.state
                assert state is not None
                click.echo(
                    f"{name:12} {state.settings.persona:5} {', '.join(state.engines):24} {server.openai_base_url}"
                )
            sys.stdout.flush()
            threading.Event().wait()
    except SettingsError as exc:
        raise click.UsageError(_name_server(str(exc), fleet_file)) from None
    except KeyboardInterrupt:
        click.echo("stopped", err=True)


@main.command()
def scenarios() -> None:
    """List the built-in scenarios."""
    for name, description in list_scenarios():
        click.echo(f"{name:22} {description}")


@main.command()
def faults() -> None:
    """List every fault kind and its rule's fields (for /admin/faults and `faults:`)."""
    from fake_server.manual import fault_manual

    click.echo(fault_manual())


@main.command()
def fixture() -> None:
    """List the `fake_server` pytest fixture's keywords and what its server offers."""
    from fake_server.manual import fixture_manual

    click.echo(fixture_manual())
