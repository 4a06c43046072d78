"""What `grader grade-many` and `grader human-score` do at the terminal: the mode grade-many's flags choose, its
progress bar, messages and exit status, around the round's library (grader.round.many, .rebuild, .k8s_job,
.human_scores). The commands' flags are declared in round.py; everything that speaks click for a round is here
or there."""

from __future__ import annotations

import contextlib
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import click

from grader.grading.grade import draw_seed
from grader.round.human_scores import record_human_scores
from grader.round.many import (
    PARTIAL,
    ROUND_FILE,
    Done,
    Entry,
    ManyError,
    ManyRun,
    Outcome,
    check_job_order,
    find_submissions,
    grade_many,
    merge,
    pick,
    pod_entries,
    rejudge_many,
    round_seed,
)
from grader.round.rebuild import SummaryOptions, summarise
from grader.round.summary import RowError

__all__ = ["echo_summary", "run_grade_many", "run_human_score"]

#: The summary with its defaults: the similarity check at its threshold, the kit's leaks, no blind copy.
PLAIN = SummaryOptions()


def echo_summary(out: Path, options: SummaryOptions = PLAIN) -> None:
    from grader.round.blind import BlindError
    from grader.round.similarity import SimilarityError

    try:
        done = summarise(out, options)
    except (RowError, SimilarityError, BlindError) as exc:
        raise click.ClickException(str(exc)) from None
    except OSError as exc:
        raise click.ClickException(f"{exc.filename or out}: {exc.strerror}") from None
    rows, analysis, paths, blind, revealed = done.rows, done.analysis, done.paths, done.blind, done.revealed
    if done.carried:
        click.echo(f"checklist points from the blind copy recorded in {len(done.carried)} report(s)", err=True)
    for note in analysis.notes:
        click.echo(note, err=True)
    for row in rows[:10]:
        click.echo(f"{row.rank:>3}  {row.name:<32} {row.score:g}/{row.max_score:g}")
    if len(rows) > 10:
        click.echo(f"     ... {len(rows) - 10} more")
    if analysis.similarity is not None:
        flagged = analysis.similarity.flagged()
        click.echo(f"similarity: {len(flagged)} deliverable pair(s) at or above {analysis.similarity.threshold:g}")
    flagged_items = [i.criterion for i in analysis.items if i.flags]
    if flagged_items:
        click.echo(f"item analysis: {len(flagged_items)} criteria flagged (items.csv)")
    click.echo(f"{paths['grades.csv']}\n{paths['index.html']}")
    if blind is not None:
        click.echo(f"blind copy for reviewers (codes, no names): {blind}")
    if revealed is not None:
        click.echo(f"code-to-name map: {revealed}")


def _emit(
    entries: list[Entry],
    job_file: Path,
    *,
    image: str,
    parallelism: int,
    job_name: str,
    seed: int,
    only: tuple[str, ...],
    runtime_class: str | None,
    privileged: bool,
) -> None:
    from grader.round.k8s_job import JobError, JobSpec, write_job

    spec = JobSpec(
        names=[e.path.name for e in entries],
        image=image,
        parallelism=parallelism,
        job_name=job_name,
        seed=seed,
        only=only,
        runtime_class=runtime_class,
        privileged=privileged,
    )
    try:
        write_job(spec, job_file)
    except JobError as exc:
        raise click.UsageError(str(exc)) from None
    except OSError as exc:
        raise click.UsageError(f"{exc.filename or job_file}: {exc.strerror}") from None
    pods = "PRIVILEGED pods" if privileged else "unprivileged pods (their own user namespace)"
    click.echo(
        f"{job_file}: Indexed Job, {len(entries)} completions, {pods}"
        + (f" under RuntimeClass {runtime_class}" if runtime_class else "")
        + f", validates against the kit's schemas; copy these to the submissions volume: {' '.join(spec.names)}"
    )


def run_grade_many(
    paths: Sequence[Path],
    out: Path | None,
    *,
    jobs: int,
    force: bool,
    seed: int | None,
    only: tuple[str, ...],
    override: Path | None,
    merge: bool,
    index: int | None,
    job_file: Path | None,
    image: str,
    parallelism: int,
    job_name: str,
    rejudge: bool = False,
    summary: SummaryOptions = PLAIN,
    runtime_class: str | None = None,
    privileged: bool = False,
) -> None:
    _one_mode(paths, out, merge=merge, rejudge=rejudge, index=index, job_file=job_file)
    try:
        if job_file is not None:
            entries = find_submissions(paths)
            check_job_order(entries)
            _emit(
                entries,
                job_file,
                image=image,
                parallelism=parallelism,
                job_name=job_name,
                seed=draw_seed() if seed is None else seed,  # the Job's pods grade one exam
                only=only,
                runtime_class=runtime_class,
                privileged=privileged,
            )
            return
        assert out is not None
        if merge:
            _merge(paths, out, summary)
            return
        if rejudge:
            _rejudge(paths, out, override=override, jobs=jobs, summary=summary)
            return
        if index is None:
            entries = find_submissions(paths, exclude=[out])
        else:  # one round folder, or the Job's list of paths: the same submission at the same index
            entries = [pick(pod_entries(paths, exclude=[out]), index)]
        # a pod of the Job is given its round's seed; its siblings write the same round.json beside it
        seed = seed if index is not None and seed is not None else round_seed(out, seed)
    except ManyError as exc:
        raise click.UsageError(str(exc)) from None
    _grade_round(
        entries, out, index=index, summary=summary, jobs=jobs, force=force, seed=seed, only=only, override=override
    )


def _one_mode(
    paths: Sequence[Path], out: Path | None, *, merge: bool, rejudge: bool, index: int | None, job_file: Path | None
) -> None:
    """The usage errors of grade-many's modes: something to grade, one mode at a time, and the --out each needs."""
    if not paths:
        raise click.UsageError(
            "give submissions (folders, archives, or folders holding them)"
            + (" or report folders" if merge or rejudge else "")
        )
    modes = {
        "--merge": merge,
        "--rejudge": rejudge,
        "--index": index is not None,
        "--emit-k8s-job": job_file is not None,
    }
    chosen = [name for name, on in modes.items() if on]
    if len(chosen) > 1:
        raise click.UsageError(f"{' and '.join(chosen)} cannot be used together")
    if out is None and job_file is None:
        raise click.UsageError("--out is required (the folder for the reports and the summary)")
    if out is not None and job_file is not None:
        raise click.UsageError("--out has no use with --emit-k8s-job: each pod writes to the reports volume")


def _grade_round(
    entries: list[Entry],
    out: Path,
    *,
    index: int | None,
    summary: SummaryOptions,
    jobs: int,
    force: bool,
    seed: int,
    only: tuple[str, ...],
    override: Path | None,
) -> None:
    """Grade the round's submissions (or a pod's one), say what could not be graded, and write the summary."""
    click.echo(f"the round's seed: {seed} (in {out / ROUND_FILE}; --seed {seed} grades it the same again)", err=True)
    run = ManyRun(entries, out, jobs=jobs, force=force, seed=seed, only=only, override=override)
    outcome = _grade_with_bar(run)
    failed = [d for d in outcome.done if d.error]
    for done in failed:
        click.echo(f"could not grade {done.entry.path}: {done.error}", err=True)
    if index is None:  # pods of a Job share --out: only a whole run tidies it
        with contextlib.suppress(OSError):
            (out / PARTIAL).rmdir()
        echo_summary(out, summary)
    else:
        done = outcome.done[0]
        state = "kept (already finished)" if done.kept else ("failed" if done.error else "graded")
        click.echo(f"{done.entry.name}: {state} {done.score:g}/{done.max_score:g} -> {out / done.entry.name}")
    sys.exit(1 if failed else 0)


def _grade_with_bar(run: ManyRun) -> Outcome:
    from grader.rubric import RubricError

    with contextlib.ExitStack() as stack:
        bars: list[Any] = []

        def on_start(todo: int, kept: int) -> None:
            click.echo(
                f"{todo} to grade, {kept} finished grades kept"
                + (" (--force to redo them)" if kept else "")
                + f", {run.jobs} at a time",
                err=True,
            )
            bars.append(
                stack.enter_context(
                    click.progressbar(
                        length=todo,
                        label="grading",
                        file=sys.stderr,
                        show_eta=True,
                        show_pos=True,
                        item_show_func=lambda item: item,
                    )
                )
            )

        def on_done(done: Done) -> None:
            what = "FAILED" if done.error else f"{done.score:g}/{done.max_score:g}"
            bars[0].update(1, f"{done.entry.name} {what} ({done.seconds:.0f} s)")

        try:
            outcome = grade_many(run, on_start=on_start, on_done=on_done)
        except RubricError as exc:
            raise click.UsageError(str(exc)) from None
        except OSError as exc:
            raise click.UsageError(f"{exc.filename or run.out}: {exc.strerror}") from None
    if outcome.note:
        click.echo(outcome.note, err=True)
    return outcome


def _rejudge(
    paths: Sequence[Path], out: Path, *, override: Path | None, jobs: int, summary: SummaryOptions = PLAIN
) -> None:
    def on_done(done: Done) -> None:
        if done.error:
            click.echo(f"could not re-judge {done.entry.path}: {done.error}", err=True)

    try:
        outcome = rejudge_many(paths, out, override=override, jobs=jobs, on_done=on_done)
    except ManyError as exc:
        raise click.UsageError(str(exc)) from None
    judged = [d for d in outcome.done if not d.error]
    seconds = sum(d.seconds for d in judged)
    click.echo(
        f"{len(judged)} of {len(outcome.done)} grades re-judged"
        + (f", {seconds / len(judged) * 1000:.0f} ms a grade" if judged else ""),
        err=True,
    )
    echo_summary(out, summary)
    sys.exit(1 if len(judged) < len(outcome.done) else 0)


def _merge(paths: Sequence[Path], out: Path, summary: SummaryOptions = PLAIN) -> None:
    try:
        merge(paths, out)
    except ManyError as exc:
        raise click.UsageError(str(exc)) from None
    echo_summary(out, summary)


def run_human_score(report_json: Path, scores: Sequence[str]) -> None:
    if not report_json.is_file():
        raise click.ClickException(f"{report_json}: no such file (give a report.json the grader wrote)")
    try:
        document = record_human_scores(report_json, scores)
    except ValueError as exc:
        raise click.ClickException(str(exc)) from None
    for entry in document["extra_data"]["human"]["checklist"]:
        if entry["score"] is not None:
            click.echo(f"{entry['id']}: {entry['score']:g}/{entry['max_score']:g}  {entry['item']}")
    click.echo(
        f"{report_json}: total now {document['score']:g}/{document['max_score']:g} "
        "(rebuild a round's summary with grader grade-many --merge)"
    )
