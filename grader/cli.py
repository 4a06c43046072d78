"""The `grader` command: parses arguments and calls the library; no logic lives here."""

from __future__ import annotations

import sys
from pathlib import Path

import click

from grader.manifests import ManifestInputError, check_manifests, to_text

__all__ = ["main"]


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
def main() -> None:
    """Grade take-home submissions for LLM serving engineers."""


@main.command()
@click.argument("paths", nargs=-1, required=True, type=click.Path(path_type=Path))
@click.option("--values", "values", type=click.Path(path_type=Path), help="Values file; PATH is then the chart.")
@click.option("--format", "fmt", type=click.Choice(["text", "json"]), default="text", show_default=True)
@click.option("--allow-kind", "allow_kinds", multiple=True, metavar="KIND",
              help="Accept documents of this kind without a schema (repeatable).")
@click.option("--schemas", type=click.Path(path_type=Path, file_okay=False),
              help="Schemas folder (default: the kit's schemas/).")
@click.option("-v", "--verbose", is_flag=True, help="Text format: show what each passing check found.")
def manifests(paths: tuple[Path, ...], values: Path | None, fmt: str, allow_kinds: tuple[str, ...],
              schemas: Path | None, verbose: bool) -> None:
    """Validate manifests offline and run the serving checklist.

    PATH is a chart folder (rendered with --values over its defaults) or rendered YAML files
    and folders. Exit status: 0 when every check passes, 1 when one fails, 2 on bad usage.
    """
    try:
        report = check_manifests(paths, values=values, schemas=schemas, allow_kinds=allow_kinds)
    except ManifestInputError as exc:
        raise click.UsageError(str(exc)) from None
    click.echo(report.to_json() if fmt == "json" else to_text(report, verbose=verbose), nl=fmt == "json")
    sys.exit(report.exit_code)


@main.command()
@click.argument("submission", type=click.Path(path_type=Path, file_okay=False))
@click.option("--output", "outputs", multiple=True, nargs=2, metavar="KIND FILE",
              help="Also check an output file against its contract schema, e.g. --output loadgen-results out.json.")
def contract(submission: Path, outputs: tuple[tuple[str, str], ...]) -> None:
    """Check SUBMISSION's submission.yaml (and any outputs given) against the contract."""
    from grader.contract import KINDS, ContractError, check_output, load_submission

    try:
        load_submission(submission)
        problems = []
        for kind, file in outputs:
            if kind not in KINDS:
                raise click.UsageError(f"unknown kind {kind!r} (known: {', '.join(KINDS)})")
            problems += [f"{file}: {line}" for line in check_output(kind, Path(file))]
    except ContractError as exc:
        click.echo(str(exc), err=True)
        sys.exit(1)
    for line in problems:
        click.echo(line, err=True)
    if problems:
        sys.exit(1)
    click.echo(f"{submission}: follows contract 1")
