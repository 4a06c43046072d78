"""What `grader grade-many` and `grader human-score` do with their arguments: the terminal side
(progress bar, messages, exit status) of grader.round.many, grader.round.summary and grader.round.k8s_job."""

from __future__ import annotations

import contextlib
import math
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from grader.grading.grade import draw_seed
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
from grader.round.similarity import DEFAULT_THRESHOLD
from grader.round.summary import Row, RowError, read_rows, write_index

if TYPE_CHECKING:
    from grader.round.analysis import Analysis

__all__ = [
    "Summary",
    "SummaryOptions",
    "parse_score",
    "record_human_scores",
    "run_grade_many",
    "run_human_score",
    "summarise",
]


@dataclass(frozen=True)
class SummaryOptions:
    """What the round's summary adds to the ranking (docs/grading-many.md)."""

    threshold: float | None = DEFAULT_THRESHOLD  # None: no similarity check
    leaks: tuple[Path, ...] = ()
    kit_leaks: bool = True
    against: tuple[Path, ...] = ()  # earlier rounds' --out folders, compared with this one
    anonymize: bool = False
    reveal: Path | None = None
    jobs: int = 1


@dataclass
class Summary:
    """What `summarise` wrote: the ranking, its analysis, the files' paths, the blind copy and the map."""

    rows: list[Row]
    analysis: Analysis
    paths: dict[str, Path]
    carried: list[str]  # names whose reports took checklist points from the blind copy
    blind: Path | None = None
    revealed: Path | None = None


def summarise(
    out: Path, options: SummaryOptions = SummaryOptions(), columns: Mapping[str, Mapping[str, str]] | None = None
) -> Summary:
    """Rebuild the round's summary in `out` from its report folders (grades.csv, index.html, the analysis, the
    blind copy when asked); `columns` adds grades.csv columns by name (column -> report folder -> value).

    Raises RowError, SimilarityError, BlindError (one line naming the file) and OSError."""
    from grader.round.analysis import analyse
    from grader.round.blind import carry_back, codes_for, write_blind, write_reveal

    rows = read_rows(out)
    took = carry_back(out, codes_for(out, [r.name for r in rows])) if options.anonymize else []
    if took:
        rows = read_rows(out)
    analysis = analyse(
        out,
        rows,
        threshold=options.threshold,
        leaks=options.leaks,
        kit_leaks=options.kit_leaks,
        against=options.against,
        jobs=options.jobs,
    )
    paths = write_index(rows, out, analysis, columns)
    blind = write_blind(out, rows, analysis) if options.anonymize else None
    revealed = write_reveal(out, options.reveal, rows) if options.reveal is not None else None
    return Summary(rows, analysis, paths, took, blind, revealed)


def _summary(out: Path, options: SummaryOptions = SummaryOptions()) -> None:
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
    summary: SummaryOptions = SummaryOptions(),
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
        _summary(out, summary)
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
    paths: Sequence[Path], out: Path, *, override: Path | None, jobs: int, summary: SummaryOptions = SummaryOptions()
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
    _summary(out, summary)
    sys.exit(1 if len(judged) < len(outcome.done) else 0)


def _merge(paths: Sequence[Path], out: Path, summary: SummaryOptions = SummaryOptions()) -> None:
    try:
        merge(paths, out)
    except ManyError as exc:
        raise click.UsageError(str(exc)) from None
    _summary(out, summary)


def parse_score(text: str) -> tuple[str, tuple[float, float]]:
    """`human.1=2/3` (or `<item text>=2.5/4`) as (item, (score, max_score)); ValueError says what is wrong."""
    item, sep, points = text.rpartition("=")
    if not sep or not item:
        raise ValueError(f"{text!r}: expected ITEM=SCORE/MAX, e.g. human.1=2/3")
    score_text, slash, max_text = points.partition("/")
    if not slash:
        raise ValueError(f"{text!r}: the points must be SCORE/MAX, e.g. 2/3")
    try:
        score, max_score = float(score_text), float(max_text)
    except ValueError:
        raise ValueError(f"{text!r}: SCORE and MAX must be numbers") from None
    if not (math.isfinite(score) and math.isfinite(max_score)):
        raise ValueError(f"{text!r}: SCORE and MAX must be finite numbers")
    return item.strip(), (score, max_score)


def record_human_scores(report_json: Path, scores: Sequence[str]) -> dict[str, Any]:
    """What `grader human-score REPORT_JSON ITEM=SCORE/MAX...` records: each argument parsed, then every point
    written into report.json at once (and report.html's Interview section); the document written.

    ValueError (a HumanScoreError among them) says what is wrong in one line; the file is then left as it was."""
    from grader.reports import apply_human_scores

    parsed: dict[str, tuple[float, float]] = {}
    for text in scores:
        item, points = parse_score(text)
        if item in parsed:
            raise ValueError(f"{text!r}: {item} is scored twice")
        parsed[item] = points
    return apply_human_scores(report_json, parsed)


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
