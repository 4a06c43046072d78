"""The candidate's own checks: `grader check`, `grader contract`, `grader manifests`, `grader memo`."""

from __future__ import annotations

import sys
from pathlib import Path

import click

from grader.manifests import ManifestInputError, check_manifests, to_text

__all__ = ["check", "contract", "manifests", "memo"]

_DELIVERABLES = ("loadgen", "tests", "gateway", "manifests", "sizing", "memo")


@click.command()
@click.argument("submission", type=click.Path(path_type=Path), default=Path("."), required=False)
@click.option(
    "--out",
    type=click.Path(path_type=Path, file_okay=False),
    default=None,
    help="Folder for report.json, junit.xml and report.html (default: check-report/, or check-report/only-PART/ "
    "with --only, so a check of one part keeps the last whole check's report).",
)
@click.option(
    "--only", "only", multiple=True, type=click.Choice(_DELIVERABLES), help="Check only this deliverable (repeatable)."
)
@click.option("--seed", type=click.IntRange(min=0), default=0, show_default=True, help="Seed for every fake server.")
@click.option(
    "--sandboxes",
    type=click.IntRange(min=1),
    default=1,
    show_default=True,
    help="Sandboxes open at once: the timed sections graded side by side, each in its own.",
)
def check(submission: Path, out: Path | None, only: tuple[str, ...], seed: int, sandboxes: int) -> None:
    """Self-check SUBMISSION (default: this folder) as the grader would, public criteria only.

    Runs the contract, every public criterion (the grader's engine and scenarios), the manifest
    checklist and the memo's honesty rules. Exit status: 0 when all pass, 1 when any fails, 2 on
    bad usage (a missing folder).
    """
    from grader.candidate.check import report_folder, run_check
    from grader.contract import ContractError

    if not submission.is_dir():
        raise click.UsageError(f"{submission}: no such folder (give the folder that holds submission.yaml)")
    try:
        out = report_folder(out, only)
        outcome = run_check(submission, out, only=only, seed=seed, sandboxes=sandboxes, echo=click.echo)
    except ContractError as exc:
        click.echo(str(exc), err=True)
        sys.exit(1)
    except OSError as exc:
        raise click.UsageError(f"{exc.filename or out}: {exc.strerror}") from None
    sys.exit(0 if outcome.passed else 1)


@click.command()
@click.argument("submission", type=click.Path(path_type=Path, file_okay=False))
@click.option(
    "--output",
    "outputs",
    multiple=True,
    nargs=2,
    metavar="KIND FILE",
    help="Also check an output file against its contract schema, e.g. --output loadgen-results out.json.",
)
def contract(submission: Path, outputs: tuple[tuple[str, str], ...]) -> None:
    """Check SUBMISSION's submission.yaml (and any outputs given) against the contract."""
    from grader.contract import KINDS, ContractError, check_output, check_submission

    if not submission.is_dir():
        raise click.UsageError(f"{submission}: no such folder (give the folder that holds submission.yaml)")
    for kind, file in outputs:
        if kind not in KINDS:
            raise click.UsageError(f"--output {kind}: unknown kind (known: {', '.join(KINDS)})")
        if not Path(file).is_file():
            raise click.UsageError(f"--output {kind} {file}: no such file")
    check = check_submission(submission)  # the one check the grade reads too
    if check.problems:
        click.echo("\n".join(check.report()), err=True)
        sys.exit(1)
    loaded = check.loaded()
    try:
        problems = []
        for kind, file in outputs:
            problems += [f"{file}: {line}" for line in check_output(kind, Path(file))]
    except ContractError as exc:
        click.echo(str(exc), err=True)
        sys.exit(1)
    for line in problems:
        click.echo(line, err=True)
    if problems:
        sys.exit(1)
    click.echo(f"{submission / 'submission.yaml'}: {loaded.follows()}")
    for kind, file in outputs:
        click.echo(f"{file}: follows {kind}.schema.json")


@click.command()
@click.argument("paths", nargs=-1, required=True, type=click.Path(path_type=Path))
@click.option("--values", "values", type=click.Path(path_type=Path), help="Values file; PATH is then the chart.")
@click.option("--format", "fmt", type=click.Choice(["text", "json"]), default="text", show_default=True)
@click.option(
    "--allow-kind",
    "allow_kinds",
    multiple=True,
    metavar="KIND",
    help="Accept documents of this kind without a schema (repeatable).",
)
@click.option(
    "--schemas", type=click.Path(path_type=Path, file_okay=False), help="Schemas folder (default: the kit's schemas/)."
)
@click.option("-v", "--verbose", is_flag=True, help="Text format: show what each passing check found.")
def manifests(
    paths: tuple[Path, ...],
    values: Path | None,
    fmt: str,
    allow_kinds: tuple[str, ...],
    schemas: Path | None,
    verbose: bool,
) -> None:
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


@click.command()
@click.argument("memo_file", metavar="FILE", type=click.Path(path_type=Path))
def memo(memo_file: Path) -> None:
    """Check a memo's front matter against the honesty rules (the ones the grader scores).

    Exit status: 0 when every scored rule holds (advice does not count), 1 when one is broken,
    2 when FILE does not exist.
    """
    from grader.candidate.check import memo_broken_rules, memo_lines
    from grader.contract import ContractError
    from grader.criteria.memo_rules import errors

    if not memo_file.is_file():
        raise click.UsageError(f"{memo_file}: no such file")
    try:
        findings = memo_broken_rules(memo_file)
    except ContractError as exc:
        raise click.UsageError(str(exc)) from None
    for line in memo_lines(memo_file, findings):
        click.echo(line)
    sys.exit(1 if errors(findings) else 0)
