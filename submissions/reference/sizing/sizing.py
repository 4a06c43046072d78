"""Size a self-hosted deployment: replicas, cost per million output tokens, monthly bill, API comparison,
KV-cache capacity. Every price, utilisation, throughput and load is a flag; one JSON object goes to stdout.

    python sizing/sizing.py --throughput 595 --gpu-hour-usd 2.99 --gpu-hour-usd 6.88 \\
        --utilisation 1.0 --utilisation 0.25 --chats-per-day 2000 ...   (--help lists every flag)

A missing or invalid flag exits 2 with a message naming the flag (all missing ones at once).
This file only parses and prints; the arithmetic is in arithmetic.py, the flags in inputs.py.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from typing import Any

import click

from arithmetic import size
from inputs import FLAGS, Inputs


def _with_flags(command: Callable[..., None]) -> Callable[..., None]:
    """Attach one click option per entry of FLAGS (in reverse, so --help lists them in table order)."""
    for flag in reversed(FLAGS):
        default = flag.default if not flag.multiple else None
        help_text = flag.help + ("  [required]" if flag.required else "")
        command = click.option(flag.option, flag.name, type=flag.kind, default=default, multiple=flag.multiple,
                               metavar=flag.metavar, help=help_text, show_default=flag.default is not None)(command)
    return command


def _missing(values: dict[str, Any]) -> list[str]:
    """Required flags not given. Checked after parsing, so one error lists all of them, not the first."""
    return [flag.option for flag in FLAGS if flag.required and values[flag.name] in (None, ())]


@click.command(context_settings={"help_option_names": ["-h", "--help"]})
@_with_flags
def main(**values: Any) -> None:
    """Print the sizing arithmetic for the given inputs as one JSON object."""
    missing = _missing(values)
    if missing:
        raise click.UsageError(f"missing required option{'s' if len(missing) > 1 else ''}: {', '.join(missing)}")
    inputs = Inputs(**{name: tuple(v) if isinstance(v, tuple) else v for name, v in values.items()})
    result = size(inputs)
    if result["kv_cache"]["sequences_at_context"] == 0:
        click.echo("warning: the KV cache cannot hold one sequence of --context-tokens; vLLM would not start",
                   err=True)
    sys.stdout.write(json.dumps(result, allow_nan=False) + "\n")


if __name__ == "__main__":
    main()
