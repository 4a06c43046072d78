"""The hiring team's round in a browser: `grader review`."""

from __future__ import annotations

from pathlib import Path

import click

__all__ = ["review"]


@click.command()
@click.argument("round_dir", metavar="ROUND_DIR", type=click.Path(path_type=Path, file_okay=False))
@click.option(
    "--host", default="127.0.0.1", show_default=True, help="Address to listen on; any but loopback asks for a token."
)
@click.option(
    "--port", type=click.IntRange(min=0, max=65535), default=0, show_default=True, help="Port (0: a free one, printed)."
)
@click.option(
    "--blind", is_flag=True, help="Name candidates by code only; revealing one is an explicit, recorded action."
)
@click.option("--reviewer", metavar="NAME", help="Who saves (default: your login name); each page may say otherwise.")
@click.option(
    "--submissions",
    type=click.Path(path_type=Path, file_okay=False),
    help="The candidates' submissions (folders or archives named as their report folders), for live exercises.",
)
@click.option(
    "--export",
    "export_only",
    is_flag=True,
    help="Write grades.csv with the interview's points and decisions, and exit.",
)
def review(
    round_dir: Path,
    host: str,
    port: int,
    blind: bool,
    reviewer: str | None,
    submissions: Path | None,
    export_only: bool,
) -> None:
    """Work a graded round (or one report folder) in the browser: the ranking, each candidate's guide beside its
    scoring sheet, decisions, live exercises and blind review. Prints the address to open.

    The sheet saves where `grader human-score` writes; notes and decisions go to review.json beside
    report.json. Exit status: 0 when stopped (Ctrl-C), 2 on bad usage (not a round, a port in use).
    """
    from grader.review.round_view import ReviewError

    try:
        if export_only:
            from grader.review.export import export_grades
            from grader.review.round_view import open_round

            click.echo(str(export_grades(open_round(round_dir, blind=blind))))
            return
        from grader.review.server import prepare, serve

        served = prepare(round_dir, host=host, port=port, blind=blind, reviewer=reviewer, submissions=submissions)
    except ReviewError as exc:
        raise click.UsageError(str(exc)) from None
    except OSError as exc:
        raise click.UsageError(f"{exc.filename or round_dir}: {exc.strerror}") from None
    try:
        serve(served, echo=click.echo)
    except KeyboardInterrupt:  # uvicorn has shut down cleanly, then passes the Ctrl-C on
        pass
    click.echo("grader review: stopped")
