"""The command line: parse and check the flags, run, write the results file, print the table.

Exit status: 0 when the run completed, whatever happened to the requests (failures are results);
1 when it could not run at all (the results file cannot be written); 2 for bad flags, with a
message naming the flag; 130 when interrupted.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from urllib.parse import urlsplit

import click

from .config import LoadConfig, Timeouts
from .report import render
from .runner import run_load

__all__ = ["main"]

_DEFAULTS = Timeouts()


def _base_url(ctx: click.Context, param: click.Parameter, value: str) -> str:
    parts = urlsplit(value)
    if parts.scheme not in ("http", "https") or not parts.netloc:
        raise click.BadParameter(f"{value!r} is not an http(s) URL; expected e.g. http://127.0.0.1:8000/v1")
    return value


def _output(ctx: click.Context, param: click.Parameter, value: Path) -> Path:
    if value.is_dir():
        raise click.BadParameter(f"{value} is a folder; give a file name")
    if not value.parent.is_dir():
        raise click.BadParameter(f"folder {value.parent} does not exist")
    return value


_seconds = click.FloatRange(min=0.001, max=86_400)


@click.command(context_settings={"help_option_names": ["-h", "--help"]})
@click.option("--base-url", required=True, callback=_base_url,
              help="OpenAI base URL, e.g. http://127.0.0.1:8000/v1.")
@click.option("--model", required=True, help="Model name sent in every request.")
@click.option("--requests", "requests_", required=True, type=click.IntRange(min=1), help="Requests to send in all.")
@click.option("--concurrency", required=True, type=click.IntRange(min=1), help="Most requests in flight at once.")
@click.option("--prompt-tokens", required=True, type=click.IntRange(min=1), help="Approximate prompt length in tokens.")
@click.option("--max-tokens", required=True, type=click.IntRange(min=1), help="max_tokens of every request.")
@click.option("--output", required=True, type=click.Path(path_type=Path), callback=_output,
              help="Results JSON file to write.")
@click.option("--api-key", default=None, help="Sent as 'Authorization: Bearer KEY'.")
@click.option("--seed", default=0, show_default=True, type=click.IntRange(min=0), help="Picks the prompt words.")
@click.option("--connect-timeout", default=_DEFAULTS.connect_s, show_default=True, type=_seconds,
              help="Seconds to open a connection.")
@click.option("--read-timeout", default=_DEFAULTS.read_s, show_default=True, type=_seconds,
              help="Longest silence in seconds: before the headers (first byte) and between reads.")
@click.option("--timeout-s", "--request-timeout", "request_timeout", default=_DEFAULTS.request_s, show_default=True,
              type=_seconds, help="Longest time in seconds for one whole request, sent to last byte; past it the "
              "request is abandoned as a `timeout` failure.")
def command(base_url: str, model: str, requests_: int, concurrency: int, prompt_tokens: int, max_tokens: int,
            output: Path, api_key: str | None, seed: int, connect_timeout: float, read_timeout: float,
            request_timeout: float) -> None:
    """Send streamed chat completions at bounded concurrency; report TTFT, per-request TPS and
    aggregate throughput with nearest-rank percentiles; write the contract's results file."""
    config = LoadConfig(base_url=base_url, model=model, requests=requests_, concurrency=concurrency,
                        prompt_tokens=prompt_tokens, max_tokens=max_tokens, api_key=api_key, seed=seed,
                        timeouts=Timeouts(connect_timeout, read_timeout, request_timeout))
    try:
        run = asyncio.run(run_load(config))
    except KeyboardInterrupt:
        click.echo("interrupted; no results written", err=True)
        raise click.exceptions.Exit(130) from None
    try:
        run.write(output)
    except OSError as exc:
        click.echo(render(run))
        raise click.ClickException(f"cannot write {output}: {exc.strerror or exc}") from None
    click.echo(render(run, str(output)))


def main() -> None:
    command(prog_name="python -m loadgen")
