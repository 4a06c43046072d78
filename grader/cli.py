"""The `grader` command: parses arguments and calls the library; no logic lives here."""

from __future__ import annotations

import sys
from pathlib import Path

import click

from grader.manifests import ManifestInputError, check_manifests, to_text

__all__ = ["main"]


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="serving-takehome-kit", prog_name="grader", message="%(prog)s %(version)s")
def main() -> None:
    """Grade take-home submissions for LLM serving engineers."""


@main.command()
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


@main.command()
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
    from grader.contract import KINDS, ContractError, check_output, load_submission

    if not submission.is_dir():
        raise click.UsageError(f"{submission}: no such folder (give the folder that holds submission.yaml)")
    for kind, file in outputs:
        if kind not in KINDS:
            raise click.UsageError(f"--output {kind}: unknown kind (known: {', '.join(KINDS)})")
        if not Path(file).is_file():
            raise click.UsageError(f"--output {kind} {file}: no such file")
    try:
        load_submission(submission)
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
    click.echo(f"{submission / 'submission.yaml'}: follows contract 1")
    for kind, file in outputs:
        click.echo(f"{file}: follows {kind}.schema.json")


@main.command()
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
@click.option("--seed", type=click.IntRange(min=0), default=0, show_default=True, help="Seed for every fake server.")
@click.option(
    "--rubric",
    "override",
    type=click.Path(path_type=Path, dir_okay=False),
    help="Override file: weights and visibility by criterion id (schemas/grader/rubric-override.schema.json).",
)
@click.option(
    "--jobs",
    type=click.IntRange(min=1),
    default=1,
    show_default=True,
    help="Sections graded at once, each in its own sandbox.",
)
def grade(submission: Path, out: Path, only: tuple[str, ...], seed: int, override: Path | None, jobs: int) -> None:
    """Grade SUBMISSION (a folder, .zip or .tar.gz) and write its reports to --out.

    Exit status: 0 when a report was written, whatever the score; 2 when the grader could not run
    (a missing submission, a bad rubric, an unwritable --out).
    """
    from grader.grading.grade import GradeRun
    from grader.grading.grade import grade as grade_submission
    from grader.reports import score_table
    from grader.rubric import RubricError

    if not submission.exists():
        raise click.UsageError(f"{submission}: no such file or folder")
    run = GradeRun(submission, out, only=only, seed=seed, override=override, jobs=jobs, echo=click.echo)
    try:
        result = grade_submission(run)
    except RubricError as exc:
        raise click.UsageError(str(exc)) from None
    except OSError as exc:
        raise click.UsageError(f"{exc.filename or out}: {exc.strerror}") from None
    click.echo("")
    click.echo(score_table(result))
    click.echo(
        f"\ngraded in {run.timings['total_s']:.1f} s (the submission's own commands ran "
        f"{run.timings['inherent_s']:.1f} s)"
    )
    click.echo(f"report: {(out / 'report.html').resolve()}")


@main.command()
@click.argument("report_dir", metavar="REPORT_DIR", type=click.Path(path_type=Path, file_okay=False))
@click.option(
    "--rubric",
    "override",
    type=click.Path(path_type=Path, dir_okay=False),
    help="Override file: weights, visibility and tolerances by criterion id.",
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


@main.command()
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
    default=Path("replay-report"),
    show_default=True,
    help="Folder for the replay's reports, records and by-hand files.",
)
@click.option(
    "--jobs",
    type=click.IntRange(min=1),
    default=5,  # grading.replay.SPREAD (not imported here: the CLI imports the grading modules lazily)
    show_default=True,
    help="Runs made at once, each in a sandbox of its own (1: one after another, as a grade makes them).",
)
def replay(
    target: Path,
    criterion: str | None,
    seed: int | None,
    case: str | None,
    scenario: str | None,
    serve: bool,
    out: Path,
    jobs: int,
) -> None:
    """Run one criterion's scenarios or cases again, judged by the same check, and show what made it fail.

    TARGET is a submission folder (then name the CRITERION) or a report folder a grade wrote (then every
    criterion it failed is replayed, unless one is named, each on the scenarios or cases that failed it
    there). Prints the verdict, the requests (or cases) that
    made it fail beside the ledgers, and the commands that reproduce the run by hand. Exit status: 0 when
    every replayed criterion passed, 1 when one did not, 2 on bad usage.
    """
    from grader.contract import ContractError
    from grader.grading.replay import ReplayError, failed_in_report, failing_runs, serve_scenario
    from grader.grading.replay import replay as replay_one
    from grader.records.book import RecordBook, RecordError
    from grader.rubric import RubricError, load_rubric

    if not target.exists():
        raise click.UsageError(f"{target}: no such submission or report folder")
    book = None
    try:
        if (target / "runs" / "index.json").is_file():
            submission, graded_seed, failed = failed_in_report(target)
            book = RecordBook.read(target / "runs")
            seed = graded_seed if seed is None else seed
            ids = [criterion] if criterion else failed
            if not ids:
                click.echo(f"{target}: the grade failed no criterion; nothing to replay")
                return
        else:
            if not criterion:
                raise click.UsageError("name the CRITERION to replay (e.g. loadgen.ttft), or give a report folder")
            submission, ids = target, [criterion]
        seed = 0 if seed is None else seed
        if serve:
            if len(ids) > 1:
                raise click.UsageError(f"--serve starts one criterion's servers; name one of: {', '.join(ids)}")
            serve_scenario(
                submission, ids[0], seed=seed, case=case, scenario=scenario, echo=click.echo, wait=_wait_for_interrupt
            )
            return
        passed = True
        rubric = load_rubric()
        for criterion_id in ids:
            # from a report, a criterion is replayed on the runs that failed it there (--case or --scenario win)
            runs = failing_runs(book, rubric, criterion_id) if book else ()
            done = replay_one(
                submission,
                criterion_id,
                out / criterion_id if len(ids) > 1 else out,
                seed=seed,
                case=case,
                scenario=scenario,
                runs=runs,
                jobs=jobs,
            )
            passed = passed and done.status == "passed"
            click.echo(
                f"{done.status.upper()} {done.score:g}/{done.criterion.weight:g}  {criterion_id}  "
                f"(seed {seed}, replayed in {done.seconds:.1f} s)"
            )
            click.echo(done.output)
            for line in done.lines:
                click.echo(line)
            click.echo("to reproduce by hand:")
            for line in done.by_hand:
                click.echo(f"  {line}")
            click.echo("")
    except (ReplayError, RubricError, ContractError, RecordError) as exc:
        raise click.UsageError(str(exc)) from None
    except OSError as exc:
        raise click.UsageError(f"{exc.filename or out}: {exc.strerror}") from None
    sys.exit(0 if passed else 1)


def _wait_for_interrupt() -> None:
    """Block until Ctrl-C (SIGINT) or SIGTERM, then return so the servers are stopped cleanly."""
    import signal
    import threading

    stop = threading.Event()
    previous = {s: signal.signal(s, lambda *_: stop.set()) for s in (signal.SIGINT, signal.SIGTERM)}
    try:
        while not stop.wait(0.5):
            pass
    finally:
        for s, handler in previous.items():
            signal.signal(s, handler)


def _shard(_ctx: click.Context, _param: click.Parameter, value: str | None) -> tuple[int, int]:
    """`I/N` as (I, N), 1 <= I <= N; no option is the whole selftest."""
    if value is None:
        return (1, 1)
    index, _, count = value.partition("/")
    if not (index.isdigit() and count.isdigit() and 1 <= int(index) <= int(count)):
        raise click.BadParameter(f"expected I/N with 1 <= I <= N (such as 2/3), got {value!r}")
    return (int(index), int(count))


@main.command()
@click.option(
    "--full",
    is_flag=True,
    help="Grade every chaff on every criterion and with the hidden variants, not its targets and a sample.",
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
def selftest(full: bool, jobs: int, names: tuple[str, ...], keep: Path | None, shard: tuple[int, int]) -> None:
    """Grade the reference (full marks) and every chaff (each loses exactly its targets)."""
    try:
        from grader.kit.selftest import SelftestError
        from grader.kit.selftest import selftest as run_selftest
    except ImportError:  # a candidate's kit carries neither the reference nor the chaff
        raise click.UsageError(
            "selftest runs from the kit's repository; this install has no reference or chaff"
        ) from None

    try:
        findings = run_selftest(full=full, jobs=jobs, names=names, echo=click.echo, keep=keep, shard=shard)
    except SelftestError as exc:
        raise click.UsageError(str(exc)) from None
    bad = [f.name for f in findings if not f.ok]
    unsure = sum(len(f.inconclusive) for f in findings)
    unstable = [f.name for f in findings if f.unstable]
    click.echo(
        f"\n{len(findings) - len(bad)} of {len(findings)} graded as expected"
        + (f"; wrong: {', '.join(bad)}" if bad else "")
        + (f"; {unsure} criteria inconclusive (a busy machine?)" if unsure else "")
        + (f"; right only when graded again: {', '.join(unstable)}" if unstable else "")
    )
    sys.exit(1 if bad else 0)


_DELIVERABLES = ("loadgen", "tests", "gateway", "manifests", "sizing", "memo")


@main.command()
@click.argument("submission", type=click.Path(path_type=Path), default=Path("."), required=False)
@click.option(
    "--out",
    type=click.Path(path_type=Path, file_okay=False),
    default=Path("check-report"),
    show_default=True,
    help="Folder for report.json, junit.xml and report.html.",
)
@click.option(
    "--only", "only", multiple=True, type=click.Choice(_DELIVERABLES), help="Check only this deliverable (repeatable)."
)
@click.option("--seed", type=click.IntRange(min=0), default=0, show_default=True, help="Seed for every fake server.")
@click.option("--jobs", type=click.IntRange(min=1), default=1, show_default=True, help="Sections graded at once.")
def check(submission: Path, out: Path, only: tuple[str, ...], seed: int, jobs: int) -> None:
    """Self-check SUBMISSION (default: this folder) as the grader would, public criteria only.

    Runs the contract, every public criterion (the grader's engine and scenarios), the manifest
    checklist and the memo's honesty rules. Exit status: 0 when all pass, 1 when any fails, 2 on
    bad usage (a missing folder).
    """
    from grader.candidate.check import run_check
    from grader.contract import ContractError

    if not submission.is_dir():
        raise click.UsageError(f"{submission}: no such folder (give the folder that holds submission.yaml)")
    try:
        outcome = run_check(submission, out, only=only, seed=seed, jobs=jobs, echo=click.echo)
    except ContractError as exc:
        click.echo(str(exc), err=True)
        sys.exit(1)
    except OSError as exc:
        raise click.UsageError(f"{exc.filename or out}: {exc.strerror}") from None
    sys.exit(0 if outcome.passed else 1)


@main.command()
@click.argument("memo_file", metavar="FILE", type=click.Path(path_type=Path))
def memo(memo_file: Path) -> None:
    """Check a memo's front matter against the honesty rules (the ones the grader scores).

    Exit status: 0 when every scored rule holds (advice does not count), 1 when one is broken,
    2 when FILE does not exist.
    """
    from grader.candidate.check import memo_lines, read_memo
    from grader.contract import ContractError
    from grader.criteria.memo_rules import errors

    if not memo_file.is_file():
        raise click.UsageError(f"{memo_file}: no such file")
    try:
        findings = read_memo(memo_file)
    except ContractError as exc:
        raise click.UsageError(str(exc)) from None
    for line in memo_lines(memo_file, findings):
        click.echo(line)
    sys.exit(1 if errors(findings) else 0)


@main.command()
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
def bundle(out: Path, pythons: str, platforms: tuple[str, ...]) -> None:
    """Build the candidate's offline archive: starter/, the kit's wheel and every dependency, chart/, schemas/, docs/.

    Needs the package index (pip download); the archive it writes installs with none. It holds no
    reference, no chaff, no hidden criteria, no hidden variants and no hidden input sets.
    """
    from grader.kit.bundle import ALL_PLATFORMS, DEFAULT_PLATFORMS, BundleError, build_bundle, build_bundles

    named = tuple(p for name in platforms for p in (ALL_PLATFORMS if name == "all" else (name,))) or DEFAULT_PLATFORMS
    versions = [p.strip() for p in pythons.split(",") if p.strip()]
    try:
        if out.name.endswith((".tar.gz", ".tgz")):
            results = [build_bundle(out, pythons=versions, platforms=named, echo=click.echo)]
        else:
            results = build_bundles(out, pythons=versions, platforms=named, echo=click.echo)
    except BundleError as exc:
        raise click.UsageError(str(exc)) from None
    for result in results:
        click.echo(
            f"{result.archive}: {result.size_bytes / 1e6:.1f} MB, {len(result.wheels)} wheels; "
            + "; ".join(result.coverage)
        )


@main.command("grade-many")
@click.argument("paths", nargs=-1, type=click.Path(path_type=Path))
@click.option(
    "--out",
    type=click.Path(path_type=Path, file_okay=False),
    help="Folder for one report folder per submission, grades.csv and index.html (not with --emit-k8s-job).",
)
@click.option("--jobs", type=click.IntRange(min=1), default=1, show_default=True, help="Submissions graded at once.")
@click.option("--force", is_flag=True, help="Grade again submissions whose grade in --out is finished.")
@click.option("--seed", type=click.IntRange(min=0), default=0, show_default=True, help="Seed for every fake server.")
@click.option(
    "--only", "only", multiple=True, metavar="PART", help="Grade only this deliverable or criterion id (repeatable)."
)
@click.option(
    "--rubric",
    "override",
    type=click.Path(path_type=Path, dir_okay=False),
    help="Override file: weights and visibility by criterion id.",
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
    "again (with --rubric) into --out, --jobs at once, and rebuild the summary; run nothing.",
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
    seed: int,
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
    anonymize: bool,
    reveal: Path | None,
) -> None:
    """Grade many submissions (folders, .zip/.tar.gz, or folders holding them) into --out.

    Resumable: a finished grade in --out is kept unless --force. The summary (grades.csv,
    index.html) adds the similarity of every pair of submissions and an item analysis of the
    criteria. Exit status: 0 when every submission has a report, 1 when the grader could not
    grade one, 2 on bad usage.
    """
    from grader.round.commands import SummaryOptions, run_grade_many
    from grader.round.similarity import DEFAULT_THRESHOLD

    if no_similarity and (threshold is not None or leaks):
        raise click.UsageError("--no-similarity cannot be used with --similarity-threshold or --leak")
    summary = SummaryOptions(
        threshold=None if no_similarity else (threshold or DEFAULT_THRESHOLD),
        leaks=leaks,
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


@main.command("human-score")
@click.argument("report_json", metavar="REPORT_JSON", type=click.Path(path_type=Path, dir_okay=False))
@click.argument("scores", nargs=-1, required=True, metavar="ITEM=SCORE/MAX...")
def human_score(report_json: Path, scores: tuple[str, ...]) -> None:
    """Record a person's checklist points in REPORT_JSON, e.g. `human.1=2/3` (ITEM is an id or the item's text).

    Works on a blind copy's reports too (OUT/blind/CODE/report.json): the next `grade-many --merge OUT
    --out OUT --anonymize` carries the points back to the named report and ranks on them."""
    from grader.round.commands import run_human_score

    run_human_score(report_json, scores)


if __name__ == "__main__":
    main()
