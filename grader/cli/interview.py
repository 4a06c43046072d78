"""The second stage: `grader interview` (the interviewer's guide) and `grader live` (live exercises)."""

from __future__ import annotations

import sys
from pathlib import Path

import click

__all__ = ["interview", "live"]


@click.command()
@click.argument("report_dir", metavar="REPORT_DIR", type=click.Path(path_type=Path, file_okay=False))
@click.option(
    "--out",
    type=click.Path(path_type=Path, file_okay=False),
    help="Folder for guide.md and guide.html (default: REPORT_DIR/interview).",
)
def interview(report_dir: Path, out: Path | None) -> None:
    """Write the interviewer's guide for one graded submission, built from its run records.

    Per deliverable the verdicts with their margins, the closest calls and every failure with its evidence;
    questions that cite the candidate's own figures, each with what a good answer covers; the live exercises
    that fit; and a scoring sheet whose points `grader human-score` records. report.html links to it. In a
    round reviewed blind (grade-many --anonymize) the guide names the candidate by their code only.
    Exit status: 0 when the guide was written; 2 when it could not be (no records, no question bank).
    """
    from grader.interview.write import InterviewError, write_interview

    if not report_dir.is_dir():
        raise click.UsageError(f"{report_dir}: no such folder (give a folder `grader grade` wrote)")
    try:
        paths = write_interview(report_dir, out)
    except InterviewError as exc:
        raise click.UsageError(str(exc)) from None
    except OSError as exc:
        raise click.UsageError(f"{exc.filename or report_dir}: {exc.strerror}") from None
    for path in paths:
        click.echo(str(path.resolve()))


@click.command()
@click.argument("submission", required=False, type=click.Path(path_type=Path))
@click.argument("exercise", required=False)
@click.option("--list", "show", is_flag=True, help="List the live exercises and exit.")
@click.option(
    "--by-hand",
    is_flag=True,
    help="Start the fake servers on this machine's loopback and wait while the candidate runs their own "
    "command against the printed URLs (instead of running it in the sandbox).",
)
@click.option("--seed", type=click.IntRange(min=0), default=0, show_default=True, help="Seed for every fake server.")
@click.option(
    "--out",
    type=click.Path(path_type=Path, file_okay=False),
    default=Path("live-report"),
    show_default=True,
    help="Folder for the exercise's runs (OUT/EXERCISE/run-N) and its log (OUT/EXERCISE/live.json).",
)
def live(submission: Path | None, exercise: str | None, show: bool, by_hand: bool, seed: int, out: Path) -> None:
    """Run a live exercise (one the grade never ran) on the candidate's own code, and judge it.

    Prints what to tell the candidate and the command, runs it in the sandbox (or waits while the candidate
    runs it, --by-hand), then the verdict, what made it fail beside the ledgers and how to reproduce it. Run
    it again after the candidate changes their code: each run is recorded. Exit status: 0 when every
    criterion passed, 1 when one did not, 2 on bad usage.
    """
    from grader.live.session import LiveError, listing, pool, run_live
    from grader.rubric import RubricError

    try:
        if show:
            for line in listing(pool()):
                click.echo(line)
            return
        if submission is None or exercise is None:
            raise click.UsageError("give SUBMISSION and EXERCISE (or --list to see the exercises)")
        if not submission.exists():
            raise click.UsageError(f"{submission}: no such folder")
        outcome = run_live(submission, exercise, out, seed=seed, by_hand=by_hand, echo=click.echo)
    except (LiveError, RubricError) as exc:
        raise click.UsageError(str(exc)) from None
    except OSError as exc:
        raise click.UsageError(f"{exc.filename or out}: {exc.strerror}") from None
    sys.exit(0 if outcome.passed else 1)
