"""Grading a round: `grader grade-many`, `grader human-score`."""

from __future__ import annotations

from pathlib import Path

import click

__all__ = ["grade_many", "human_score"]


@click.command("grade-many")
@click.argument("paths", nargs=-1, type=click.Path(path_type=Path))
@click.option(
    "--out",
    type=click.Path(path_type=Path, file_okay=False),
    help="Folder for one report folder per submission, grades.csv and index.html (not with --emit-k8s-job).",
)
@click.option("--jobs", type=click.IntRange(min=1), default=1, show_default=True, help="Submissions graded at once.")
@click.option("--force", is_flag=True, help="Grade again submissions whose grade in --out is finished.")
@click.option(
    "--seed",
    type=click.IntRange(min=0),
    default=None,
    help="The round's seed: the fake servers' and the unseen variants' draws, one for every candidate. "
    "Default: drawn for a new round, kept in OUT/round.json for a round resumed.",
)
@click.option(
    "--only", "only", multiple=True, metavar="PART", help="Grade only this deliverable or criterion id (repeatable)."
)
@click.option(
    "--override",
    "--rubric",
    "override",
    type=click.Path(path_type=Path, dir_okay=False),
    help="Override file: weights, visibility and tolerances by criterion id; --rubric is its older name.",
)
@click.option(
    "--merge",
    is_flag=True,
    help="PATHS are report folders (or folders of them): gather them into --out "
    "and rebuild grades.csv and index.html; grade nothing.",
)
@click.option(
    "--rejudge",
    is_flag=True,
    help="PATHS are report folders (or folders of them): judge their run records "
    "again (with --override) into --out, --jobs at once, and rebuild the summary; run nothing.",
)
@click.option(
    "--index",
    type=click.IntRange(min=0),
    metavar="I",
    help="Grade only the I-th submission listed (from 0, by name), no summary: one pod of the Kubernetes Job.",
)
@click.option(
    "--emit-k8s-job",
    "job_file",
    type=click.Path(path_type=Path, dir_okay=False),
    help="Write a Kubernetes Indexed Job grading PATHS to FILE (checked offline), and grade nothing.",
)
@click.option(
    "--image",
    default="serving-takehome-grader:latest",
    show_default=True,
    help="With --emit-k8s-job: the grader's image.",
)
@click.option(
    "--parallelism",
    type=click.IntRange(min=1),
    default=4,
    show_default=True,
    help="With --emit-k8s-job: pods running at once.",
)
@click.option("--job-name", default="grade-round", show_default=True, help="With --emit-k8s-job: the Job's name.")
@click.option(
    "--runtime-class",
    metavar="NAME",
    help="With --emit-k8s-job: run the pods under this RuntimeClass "
    "(gVisor's or Kata's, where the cluster offers one).",
)
@click.option(
    "--privileged",
    is_flag=True,
    help="With --emit-k8s-job: privileged pods, for clusters without user "
    "namespaces: a trade-off (docs/grading-many.md), never the default.",
)
@click.option(
    "--similarity-threshold",
    "threshold",
    type=click.FloatRange(min=0, max=1, min_open=True),
    default=None,
    metavar="SHARE",
    help="Flag pairs of submissions whose similarity in a deliverable is at least SHARE "
    "(default 0.5, measured: docs/grading-many.md).",
)
@click.option("--no-similarity", is_flag=True, help="Skip the similarity check (the item analysis is still made).")
@click.option(
    "--leak",
    "leaks",
    multiple=True,
    type=click.Path(path_type=Path),
    metavar="PATH",
    help="Also compare every submission with this leaked solution (a submission, or a folder of them; repeatable).",
)
@click.option("--no-kit-leaks", is_flag=True, help="Do not compare with the kit's reference and chaff.")
@click.option(
    "--against",
    multiple=True,
    type=click.Path(path_type=Path, file_okay=False),
    metavar="PAST_ROUND",
    help="Also compare every submission with every submission of this earlier round (its --out folder; "
    "repeatable): a copy is flagged with the past candidate's name, or their code if it was graded blind.",
)
@click.option(
    "--anonymize",
    is_flag=True,
    help="Also write --out/blind/: every report, index.html and grades.csv "
    "with a stable code for each candidate and no name.",
)
@click.option(
    "--reveal",
    type=click.Path(path_type=Path, dir_okay=False),
    metavar="FILE",
    help="Write the code-to-name map of the blind copy to FILE (CSV).",
)
def grade_many(
    paths: tuple[Path, ...],
    out: Path | None,
    jobs: int,
    force: bool,
    seed: int | None,
    only: tuple[str, ...],
    override: Path | None,
    merge: bool,
    rejudge: bool,
    index: int | None,
    job_file: Path | None,
    image: str,
    parallelism: int,
    job_name: str,
    runtime_class: str | None,
    privileged: bool,
    threshold: float | None,
    no_similarity: bool,
    leaks: tuple[Path, ...],
    no_kit_leaks: bool,
    against: tuple[Path, ...],
    anonymize: bool,
    reveal: Path | None,
) -> None:
    """Grade many submissions (folders, .zip/.tar.gz, or folders holding them) into --out.

    Resumable: a finished grade in --out is kept unless --force. The summary (grades.csv,
    index.html) adds the similarity of every pair of submissions and an item analysis of the
    criteria. Exit status: 0 when every submission has a report, 1 when the grader could not
    grade one, 2 on bad usage.
    """
    from grader.cli.round_modes import run_grade_many
    from grader.round.rebuild import SummaryOptions
    from grader.round.similarity import DEFAULT_THRESHOLD

    if no_similarity and (threshold is not None or leaks or against):
        raise click.UsageError("--no-similarity cannot be used with --similarity-threshold, --leak or --against")
    summary = SummaryOptions(
        threshold=None if no_similarity else (threshold or DEFAULT_THRESHOLD),
        leaks=leaks,
        against=against,
        kit_leaks=not no_kit_leaks,
        anonymize=anonymize,
        reveal=reveal,
        jobs=jobs,
    )
    run_grade_many(
        paths,
        out,
        jobs=jobs,
        force=force,
        seed=seed,
        only=only,
        override=override,
        merge=merge,
        index=index,
        job_file=job_file,
        image=image,
        parallelism=parallelism,
        job_name=job_name,
        rejudge=rejudge,
        summary=summary,
        runtime_class=runtime_class,
        privileged=privileged,
    )


@click.command("human-score")
@click.argument("report_json", metavar="REPORT_JSON", type=click.Path(path_type=Path, dir_okay=False))
@click.argument("scores", nargs=-1, required=True, metavar="ITEM=SCORE/MAX...")
def human_score(report_json: Path, scores: tuple[str, ...]) -> None:
    """Record a person's checklist points in REPORT_JSON, e.g. `human.1=2/3` (ITEM is an id or the item's text).

    Works on a blind copy's reports too (OUT/blind/CODE/report.json): the next `grade-many --merge OUT
    --out OUT --anonymize` carries the points back to the named report and ranks on them."""
    from grader.cli.round_modes import run_human_score

    run_human_score(report_json, scores)
