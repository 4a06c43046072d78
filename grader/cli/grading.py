"""Grading one submission: `grader grade`, `grader rejudge`, `grader replay`."""

from __future__ import annotations

import sys
from pathlib import Path

import click

__all__ = ["grade", "rejudge", "replay"]


@click.command()
@click.argument("submission", type=click.Path(path_type=Path))
@click.option(
    "--out",
    type=click.Path(path_type=Path, file_okay=False),
    default=Path("grade-report"),
    show_default=True,
    help="Folder for report.json, junit.xml and report.html.",
)
@click.option(
    "--only",
    "only",
    multiple=True,
    metavar="PART",
    help="Grade only this deliverable (loadgen, tests, ...) or criterion id (repeatable).",
)
@click.option(
    "--seed",
    type=click.IntRange(min=0),
    default=None,
    help="The grade's seed: the fake servers' and the unseen variants' draws (default: drawn afresh, and "
    "printed; give it again to grade the same again, or give a round's to grade its exam).",
)
@click.option(
    "--override",
    "--rubric",
    "override",
    type=click.Path(path_type=Path, dir_okay=False),
    help="Override file: weights, visibility and tolerances by criterion id (schemas/grader/rubric-override.schema.json); "
    "--rubric is its older name.",
)
@click.option(
    "--sandboxes",
    type=click.IntRange(min=1),
    default=1,
    show_default=True,
    help="Sandboxes open at once: the timed sections graded side by side, each in its own.",
)
@click.option(
    "--edition",
    default="",
    help="Grade against this edition's numbers, whatever the submission's stamp says (default: the edition "
    "its submission.yaml names, else `default`).",
)
def grade(
    submission: Path,
    out: Path,
    only: tuple[str, ...],
    seed: int | None,
    override: Path | None,
    sandboxes: int,
    edition: str,
) -> None:
    """Grade SUBMISSION (a folder, .zip or .tar.gz) and write its reports to --out.

    Exit status: 0 when a report was written, whatever the score; 2 when the grader could not run
    (a missing submission, a bad rubric, an unwritable --out).
    """
    from grader.grading.grade import GradeRequest, draw_seed
    from grader.grading.grade import grade as grade_submission
    from grader.reports import score_table
    from grader.rubric import RubricError

    if not submission.exists():
        raise click.UsageError(f"{submission}: no such file or folder")
    if seed is None:
        seed = draw_seed()
        click.echo(f"seed {seed} (drawn; --seed {seed} grades the same again)")
    run = GradeRequest(
        submission, out, only=only, seed=seed, override=override, sandboxes=sandboxes, echo=click.echo, edition=edition
    )
    try:
        result = grade_submission(run)
    except RubricError as exc:
        raise click.UsageError(str(exc)) from None
    except OSError as exc:
        raise click.UsageError(f"{exc.filename or out}: {exc.strerror}") from None
    click.echo("")
    click.echo(score_table(result))
    click.echo(f"\ngraded in {result.duration_s:.1f} s (the submission's own commands ran {result.inherent_s:.1f} s)")
    click.echo(f"report: {(out / 'report.html').resolve()}")


@click.command()
@click.argument("report_dir", metavar="REPORT_DIR", type=click.Path(path_type=Path, file_okay=False))
@click.option(
    "--override",
    "--rubric",
    "override",
    type=click.Path(path_type=Path, dir_okay=False),
    help="Override file: weights, visibility and tolerances by criterion id; --rubric is its older name.",
)
@click.option(
    "--out",
    type=click.Path(path_type=Path, file_okay=False),
    help="Folder for the new reports (default: REPORT_DIR itself); the run records are copied there.",
)
def rejudge(report_dir: Path, override: Path | None, out: Path | None) -> None:
    """Judge a grade's run records (REPORT_DIR/runs/) again, with the kit's rubric or an override.

    Runs nothing of the candidate's. Exit status: 0 when the reports were written; 2 when they could
    not be (no records, records of another version, a bad override, an unwritable --out).
    """
    from grader.grading.rejudge import RecordError
    from grader.grading.rejudge import rejudge as rejudge_grade
    from grader.reports import score_table
    from grader.rubric import RubricError

    if not report_dir.is_dir():
        raise click.UsageError(f"{report_dir}: no such folder (give a folder `grader grade` wrote)")
    try:
        result = rejudge_grade(report_dir, override=override, out=out)
    except (RecordError, RubricError) as exc:
        raise click.UsageError(str(exc)) from None
    except OSError as exc:
        raise click.UsageError(f"{exc.filename or out}: {exc.strerror}") from None
    click.echo(score_table(result))
    click.echo(f"report: {((out or report_dir) / 'report.html').resolve()}")


@click.command()
@click.argument("target", metavar="SUBMISSION|REPORT_DIR", type=click.Path(path_type=Path))
@click.argument("criterion", required=False)
@click.option(
    "--seed", type=click.IntRange(min=0), default=None, help="The grade's seed (default: 0, or the report folder's)."
)
@click.option("--case", help="A gateway criterion: only this one of its cases.")
@click.option("--scenario", help="A load-generator criterion: only this one of its scenarios.")
@click.option(
    "--serve",
    is_flag=True,
    help="Start the scenario's fake servers and keep them up until Ctrl-C, "
    "printing how to run your own command against them (step through it in a debugger).",
)
@click.option(
    "--out",
    type=click.Path(path_type=Path, file_okay=False),
    default=None,
    help="Folder for the replay's reports, records and by-hand files (default: grader-replay-NAME in the "
    "system's temporary folder, outside the submission).",
)
@click.option(
    "--sandboxes",
    type=click.IntRange(min=1),
    default=5,  # grading.replay.SPREAD (not imported here: the CLI imports the grading modules lazily)
    show_default=True,
    help="Sandboxes open at once: the runs made side by side, each in its own (1: one after another, as a "
    "grade makes them).",
)
def replay(
    target: Path,
    criterion: str | None,
    seed: int | None,
    case: str | None,
    scenario: str | None,
    serve: bool,
    out: Path | None,
    sandboxes: int,
) -> None:
    """Run one criterion's scenarios or cases again, judged by the same check, and show what made it fail.

    TARGET is a submission folder (then name the CRITERION) or a report folder a grade wrote (then every
    criterion it failed is replayed, unless one is named, each on the scenarios or cases that failed it
    there). Prints the verdict, the requests (or cases) that
    made it fail beside the ledgers, and the commands that reproduce the run by hand. Exit status: 0 when
    every replayed criterion passed, 1 when one did not, 2 on bad usage.
    """
    from grader.contract import ContractError
    from grader.grading.replay import ReplayError, replay_target, wait_for_interrupt
    from grader.records.book import RecordError
    from grader.rubric import RubricError

    if not target.exists():
        raise click.UsageError(f"{target}: no such submission or report folder")
    try:
        passed = replay_target(
            target,
            criterion,
            seed=seed,
            case=case,
            scenario=scenario,
            serve=serve,
            out=out,
            sandboxes=sandboxes,
            echo=click.echo,
            wait=wait_for_interrupt,
        )
    except (ReplayError, RubricError, ContractError, RecordError) as exc:
        raise click.UsageError(str(exc)) from None
    except OSError as exc:
        raise click.UsageError(f"{exc.filename or out}: {exc.strerror}") from None
    sys.exit(0 if passed else 1)
