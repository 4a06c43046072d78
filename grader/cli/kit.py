"""Building and proving the kit: `grader bundle`, `grader selftest`."""

from __future__ import annotations

import sys
from pathlib import Path

import click

__all__ = ["bundle", "selftest"]


def _shard(_ctx: click.Context, _param: click.Parameter, value: str | None) -> tuple[int, int]:
    """`I/N` as (I, N), 1 <= I <= N; no option is the whole selftest."""
    if value is None:
        return (1, 1)
    index, _, count = value.partition("/")
    if not (index.isdigit() and count.isdigit() and 1 <= int(index) <= int(count)):
        raise click.BadParameter(f"expected I/N with 1 <= I <= N (such as 2/3), got {value!r}")
    return (int(index), int(count))


@click.command()
@click.option(
    "--full",
    is_flag=True,
    help="Grade every chaff on every criterion and with the unseen variants, not its targets and a sample.",
)
@click.option("--jobs", type=click.IntRange(min=1), default=2, show_default=True, help="Submissions graded at once.")
@click.option("--only", "names", multiple=True, metavar="NAME", help="Only the reference or this chaff (repeatable).")
@click.option(
    "--keep",
    type=click.Path(path_type=Path, file_okay=False),
    help="Keep each grade's reports and run records in this folder (one subfolder per submission).",
)
@click.option(
    "--shard",
    callback=_shard,
    metavar="I/N",
    help="Grade only the I-th of N equal shares of the submissions (to spread the selftest over N jobs).",
)
@click.option(
    "--sample",
    type=click.IntRange(min=0),
    metavar="K",
    help="Grade the reference and K chaff drawn by --sample-seed, not every chaff (it names the ones drawn).",
)
@click.option(
    "--sample-seed",
    type=click.IntRange(min=0),
    metavar="SEED",
    help="The seed that draws --sample's chaff (default: a fresh one, printed).",
)
def selftest(
    full: bool,
    jobs: int,
    names: tuple[str, ...],
    keep: Path | None,
    shard: tuple[int, int],
    sample: int | None,
    sample_seed: int | None,
) -> None:
    """Grade the reference (full marks) and every chaff (each loses exactly its targets)."""
    try:
        from grader.kit.selftest import SelftestError, summary_line
        from grader.kit.selftest import selftest as run_selftest
    except ImportError:  # a candidate's kit carries neither the reference nor the chaff
        raise click.UsageError(
            "selftest runs from the kit's repository; this install has no reference or chaff"
        ) from None

    if sample_seed is not None and sample is None:
        raise click.UsageError("--sample-seed draws --sample's chaff: give --sample K too")
    drawn = None
    if sample is not None:
        from grader.grading.grade import draw_seed

        drawn = (sample, draw_seed() if sample_seed is None else sample_seed)
    try:
        findings = run_selftest(
            full=full, jobs=jobs, names=names, echo=click.echo, keep=keep, shard=shard, sample=drawn
        )
    except SelftestError as exc:
        raise click.UsageError(str(exc)) from None
    click.echo("\n" + summary_line(findings))
    sys.exit(0 if all(f.ok for f in findings) else 1)


@click.command()
@click.option(
    "--out",
    type=click.Path(path_type=Path),
    required=True,
    help="A folder: one archive per platform in it (takehome-PLATFORM.tar.gz). A .tar.gz file: one "
    "archive holding every named platform.",
)
@click.option(
    "--python",
    "pythons",
    default="3.11,3.12,3.13",
    show_default=True,
    help="Python versions to carry wheels for, comma-separated.",
)
@click.option(
    "--platform",
    "platforms",
    multiple=True,
    metavar="NAME",
    help="linux-x86_64, linux-aarch64, macos-arm64, macos-x86_64, windows-amd64, or all (repeatable; "
    "default: this machine's).",
)
@click.option(
    "--edition",
    default="default",
    show_default=True,
    help="The cohort's edition: its own memo scenario, published scenario settings and gateway config, drawn "
    "from its name (docs/editions.md); `default` keeps the kit's.",
)
def bundle(out: Path, pythons: str, platforms: tuple[str, ...], edition: str) -> None:
    """Build the candidate's offline archive: starter/, the kit's wheel and every dependency, chart/, schemas/, docs/.

    Needs the package index (pip download); the archive it writes installs with none. It holds no
    reference, no chaff, no hidden criteria, no unseen variants and no unseen input sets.
    """
    from grader.kit.bundle import BundleError, build

    try:
        results = build(
            out, pythons=[p.strip() for p in pythons.split(",")], platforms=platforms, edition=edition, echo=click.echo
        )
    except BundleError as exc:
        raise click.UsageError(str(exc)) from None
    for result in results:
        click.echo(
            f"{result.archive}: {result.size_bytes / 1e6:.1f} MB, {len(result.wheels)} wheels; "
            + "; ".join(result.coverage)
        )
