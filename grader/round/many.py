"""`grader grade-many`: grade a hiring round's submissions, in parallel, resumably.

    from grader.round.many import ManyRun, find_submissions, grade_many
    entries = find_submissions([Path("returns/")])          # one Entry per candidate, sorted by name
    outcome = grade_many(ManyRun(entries, Path("grades"), jobs=2))

Each submission is graded by `grader.grading.grade.grade` in its own sandbox (its own network namespace,
so the fake servers' and the gateway's ports never meet) into `OUT/<name>/`. A grade is written
into `OUT/.partial/<name>/` and renamed into place only once its reports are complete, so a run
that is killed leaves either a finished grade or nothing: the next run keeps every finished
grade (unless `force`) and redoes the rest. `grades.csv` and `index.html` are rebuilt from the
report folders at the end (grader/round/summary.py), which is also what `--merge` does. Beside each
grade the deliverables' text is kept (`sources.json.gz`, grader/round/sources.py) for the round's
similarity check, so a merged or re-judged round is compared as a local one.
"""

from __future__ import annotations

import json
import re
import shutil
import threading
import time
from collections.abc import Callable, Sequence
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from dataclasses import dataclass, field
from pathlib import Path

from grader.grading.grade import GradeRequest, draw_seed, grade
from grader.reports import FILE_NAMES
from grader.round.sources import SOURCES_NAME
from grader.rubric import load_rubric

__all__ = [
    "ARCHIVE_SUFFIXES",
    "PARTIAL",
    "ROUND_FILE",
    "Done",
    "Entry",
    "ManyError",
    "ManyRun",
    "Outcome",
    "find_submissions",
    "finished",
    "grade_many",
    "merge",
    "pick",
    "pod_entries",
    "rejudge_many",
    "report_folders",
    "round_seed",
]

ARCHIVE_SUFFIXES = (".zip", ".tar.gz", ".tgz", ".tar")
PARTIAL = ".partial"  # under OUT: grades in progress; never a candidate's name (names never start with ".")
_UNSAFE_NAME = re.compile(r"[^A-Za-z0-9._-]+")


class ManyError(ValueError):
    """Arguments grade-many cannot use: no submissions, two with one name, an index out of range."""


@dataclass(frozen=True)
class Entry:
    """One submission to grade: its report folder's name and where it is."""

    name: str
    path: Path


@dataclass
class ManyRun:
    """What a grade-many run was asked to do."""

    entries: Sequence[Entry]
    out: Path
    jobs: int = 1
    force: bool = False
    seed: int = 0
    only: tuple[str, ...] = ()
    override: Path | None = None  # a hiring team's rubric override, as for `grader grade --override`


@dataclass
class Done:
    """One submission's grade as the run saw it: graded now, kept from an earlier run, or failed."""

    entry: Entry
    kept: bool  # a finished grade from an earlier run, not redone
    score: float = 0.0
    max_score: float = 0.0
    seconds: float = 0.0
    error: str = ""  # the grader itself could not grade it (the rest of the run goes on)


@dataclass
class Outcome:
    done: list[Done] = field(default_factory=list)
    note: str = ""  # why fewer grades ran at once than asked, if so


def _name_of(path: Path) -> str:
    name = path.name
    for suffix in ARCHIVE_SUFFIXES:
        if name.lower().endswith(suffix):
            name = name[: -len(suffix)]
            break
    name = _UNSAFE_NAME.sub("-", name).strip("-.")
    return name or "submission"


def _is_archive(path: Path) -> bool:
    return path.is_file() and path.name.lower().endswith(ARCHIVE_SUFFIXES)


def _holds_submissions(folder: Path) -> bool:
    return any((child / "submission.yaml").is_file() or _is_archive(child) for child in folder.iterdir())


def find_submissions(paths: Sequence[Path], *, exclude: Sequence[Path] = (), expand: bool = True) -> list[Entry]:
    """The submissions the arguments name, sorted by name.

    An archive, or a folder with submission.yaml, is one submission. A folder without one that
    holds submissions (folders with submission.yaml, archives) is a round: each of its visible
    folders and archives is a submission, so a candidate who left out submission.yaml still gets
    a row (and a contract failure) rather than disappearing. Any other folder is one submission.
    With `expand` off every argument is one submission (a Kubernetes pod's list, made already).
    """
    skip = {p.resolve() for p in exclude}
    found: list[Entry] = []
    for path in paths:
        path = Path(path)
        if not path.exists():
            raise ManyError(f"{path}: no such file or folder")
        if path.is_file():
            if not _is_archive(path):
                raise ManyError(f"{path}: not a submission (a folder, or a {', '.join(ARCHIVE_SUFFIXES)} archive)")
            found.append(Entry(_name_of(path), path))
        elif not expand or (path / "submission.yaml").is_file() or not _holds_submissions(path):
            found.append(Entry(_name_of(path), path))
        else:
            for child in sorted(path.iterdir()):
                if child.name.startswith(".") or child.resolve() in skip:
                    continue
                if child.is_dir() or _is_archive(child):
                    found.append(Entry(_name_of(child), child))
    if not found:
        raise ManyError("no submissions found in " + ", ".join(str(p) for p in paths))
    by_name: dict[str, Entry] = {}
    for entry in found:
        if entry.name in by_name:
            raise ManyError(
                f"two submissions would share the report folder {entry.name!r}: "
                f"{by_name[entry.name].path} and {entry.path}; rename one"
            )
        by_name[entry.name] = entry
    return sorted(found, key=lambda e: e.name)


def finished(folder: Path, *, criteria: Sequence[str] | None = None, seed: int | None = None) -> bool:
    """Whether `folder` holds a complete grade (every report file, a readable report.json), and,
    when given, one of these criteria at this seed: a grade of something else is not reused."""
    if not all((folder / name).is_file() for name in FILE_NAMES.values()):
        return False
    try:
        kit = json.loads((folder / FILE_NAMES["json"]).read_text(encoding="utf-8"))["extra_data"]["kit"]
        graded = [c["id"] for c in kit["criteria"]]
    except (OSError, ValueError, KeyError, TypeError):
        return False
    if criteria is not None and sorted(graded) != sorted(criteria):
        return False
    return seed is None or kit.get("seed") == seed


def _parallel_limit(run: ManyRun, criteria: Sequence[str]) -> tuple[int, str]:
    """Grades at once. Without namespaces every gateway listens on the host's one loopback port,
    so parallel gateway grades would meet; then they run one at a time, and the run says so."""
    if run.jobs <= 1 or not any(c.startswith("gateway.") for c in criteria):
        return run.jobs, ""
    from grader.sandbox.box import isolation_available

    isolated, why = isolation_available()
    if isolated:
        return run.jobs, ""
    return 1, f"grading one submission at a time: no sandbox here ({why}), so the gateways would share a port"


def _grade_one(run: ManyRun, entry: Entry) -> Done:
    partial = run.out / PARTIAL / entry.name
    shutil.rmtree(partial, ignore_errors=True)
    partial.mkdir(parents=True)
    t0 = time.perf_counter()
    with (partial / "grade.log").open("w", encoding="utf-8") as log:

        def echo(line: str) -> None:
            log.write(line + "\n")
            log.flush()

        try:
            result = grade(
                GradeRequest(entry.path, partial, only=run.only, seed=run.seed, override=run.override, echo=echo)
            )
        except Exception as exc:  # noqa: BLE001 - the grader's own failure on one submission: the run goes on
            echo(f"the grader could not grade {entry.path}: {type(exc).__name__}: {exc}")
            return Done(
                entry,
                kept=False,
                seconds=time.perf_counter() - t0,
                error=f"{type(exc).__name__}: {exc} (log: {partial / 'grade.log'})",
            )
        _keep_sources(entry, partial, echo)
    final = run.out / entry.name
    if final.exists():
        old = run.out / PARTIAL / f"{entry.name}.old"
        shutil.rmtree(old, ignore_errors=True)
        final.rename(old)
        shutil.rmtree(old, ignore_errors=True)
    partial.rename(final)
    return Done(entry, kept=False, score=result.score, max_score=result.max_score, seconds=time.perf_counter() - t0)


def _keep_sources(entry: Entry, folder: Path, echo: Callable[[str], None]) -> None:
    """The deliverables' text beside the grade, for the round's similarity check (grader/round/sources.py)."""
    from grader.grading.archive import ArchiveError
    from grader.round.sources import snapshot, write_sources

    try:
        write_sources(snapshot(entry.path), folder)
    except (OSError, ArchiveError) as exc:  # the grade stands; the similarity check says what it lacks
        echo(f"the deliverables' text was not kept for the similarity check: {exc}")


def _kept(folder: Path, entry: Entry) -> Done:
    data = json.loads((folder / FILE_NAMES["json"]).read_text(encoding="utf-8"))
    return Done(entry, kept=True, score=float(data["score"]), max_score=float(data["max_score"]))


def grade_many(
    run: ManyRun,
    *,
    on_start: Callable[[int, int], None] = lambda todo, kept: None,
    on_done: Callable[[Done], None] = lambda done: None,
) -> Outcome:
    """Grade every entry not already finished in `run.out` (all of them with `force`).

    `on_start(to_grade, kept)` is called once before grading; `on_done` after each grade, from
    the calling thread, in the order grades finish. Report folders only: the caller writes the
    summary (grader.round.summary.write_index) when it wants one.
    """
    criteria = [c.id for c in load_rubric(None, override=run.override).select(run.only)]
    jobs, note = _parallel_limit(run, criteria)
    run.out.mkdir(parents=True, exist_ok=True)
    outcome = Outcome(note=note)
    todo: list[Entry] = []
    for entry in run.entries:
        folder = run.out / entry.name
        if not run.force and finished(folder, criteria=criteria, seed=run.seed):
            outcome.done.append(_kept(folder, entry))
            if not (folder / SOURCES_NAME).is_file():  # graded before grades kept them
                _keep_sources(entry, folder, lambda line: None)
        else:
            todo.append(entry)
    on_start(len(todo), len(outcome.done))
    lock = threading.Lock()
    with ThreadPoolExecutor(max_workers=max(1, min(jobs, len(todo) or 1))) as pool:
        pending: set[Future[Done]] = {pool.submit(_grade_one, run, entry) for entry in todo}
        while pending:
            complete, pending = wait(pending, return_when=FIRST_COMPLETED)
            for future in complete:
                done = future.result()
                with lock:
                    outcome.done.append(done)
                on_done(done)
    order = {e.name: i for i, e in enumerate(run.entries)}
    outcome.done.sort(key=lambda d: order[d.entry.name])
    return outcome


ROUND_FILE = "round.json"


def round_seed(out: Path, given: int | None) -> int:
    """The round's seed: one for every candidate of the round (one exam), drawn afresh for a new round unless
    given, and kept in OUT/round.json so that a round resumed grades the rest with the same one. A seed given
    for a round already graded at another is refused: it would grade one round as two exams."""
    path = out / ROUND_FILE
    kept: int | None = None
    if path.is_file():
        try:
            value = json.loads(path.read_text(encoding="utf-8")).get("seed")
        except (ValueError, AttributeError, OSError) as exc:
            raise ManyError(f"{path}: not the round's record ({exc}); remove it to start the round afresh") from None
        kept = value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else None
        if kept is None:
            raise ManyError(f"{path}: seed: a whole number >= 0; remove the file to start the round afresh")
    if given is not None and kept is not None and given != kept:
        raise ManyError(
            f"--seed {given}: the round in {out} was graded at seed {kept} ({path}); grade it at that seed, or "
            "into another --out"
        )
    seed = given if given is not None else kept if kept is not None else draw_seed()
    out.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({"seed": seed}) + "\n", encoding="utf-8")
    return seed


def pick(entries: Sequence[Entry], index: int) -> Entry:
    """The entry a Kubernetes Indexed Job's pod grades (its JOB_COMPLETION_INDEX)."""
    if not 0 <= index < len(entries):
        raise ManyError(f"--index {index}: out of range; there are {len(entries)} submissions (0..{len(entries) - 1})")
    return entries[index]


def pod_entries(paths: Sequence[Path], *, exclude: Sequence[Path] = ()) -> list[Entry]:
    """The submissions `--index` chooses among, in index order.

    A round can be named two ways, and both must give index i the same submission: one round
    folder (`grade-many ROUND --index I`) is expanded as `grade-many ROUND` expands it, while the
    Job's explicit list (`-- /submissions/a /submissions/b ...`, made by expanding the round
    once) is taken one argument per submission, so that a candidate's folder lacking
    submission.yaml is never read as a round of its own there.
    """
    return find_submissions(paths, exclude=exclude, expand=len(paths) == 1)


def check_job_order(entries: Sequence[Entry]) -> None:
    """Refuse a Job whose pods would not grade `entries[i]` at index i.

    The pods see the Job's list of paths (`pod_entries`), not the round folder it came from;
    a Job of one submission is the only list a pod expands, so a lone folder that itself holds
    submissions (no submission.yaml of its own) would be read as a round there.
    """
    chosen = pod_entries([e.path for e in entries])
    if [e.name for e in chosen] != [e.name for e in entries]:
        raise ManyError(
            f"{entries[0].path}: a Job of this one submission would grade what it holds instead "
            "(it has no submission.yaml but holds submissions); add submission.yaml, or grade it with grader grade"
        )


def report_folders(paths: Sequence[Path]) -> list[Path]:
    """Report folders named by `--merge` arguments: a folder holding report.json, or a folder of them."""
    folders: list[Path] = []
    for path in paths:
        path = Path(path)
        if not path.is_dir():
            raise ManyError(f"--merge {path}: no such folder")
        if (path / FILE_NAMES["json"]).is_file():
            folders.append(path)
            continue
        inner = [
            p
            for p in sorted(path.iterdir())
            if p.is_dir() and not p.name.startswith(".") and (p / FILE_NAMES["json"]).is_file()
        ]
        if not inner:
            raise ManyError(f"--merge {path}: holds no report.json, nor folders that do")
        folders += inner
    return folders


def _rejudge_one(folder: Path, target: Path, override: Path | None) -> Done:
    from grader.grading.rejudge import rejudge

    entry = Entry(folder.name, folder)
    t0 = time.perf_counter()
    try:
        result = rejudge(folder, override=override, out=target)
    except (ValueError, OSError) as exc:  # RecordError, RubricError: this folder's records; the round goes on
        why = str(exc) if isinstance(exc, ValueError) else f"{exc.filename}: {exc.strerror}"
        return Done(entry, kept=False, seconds=time.perf_counter() - t0, error=why)
    if (folder / SOURCES_NAME).is_file() and target.resolve() != folder.resolve():
        shutil.copy2(folder / SOURCES_NAME, target / SOURCES_NAME)
    return Done(entry, kept=False, score=result.score, max_score=result.max_score, seconds=time.perf_counter() - t0)


def rejudge_many(
    paths: Sequence[Path],
    out: Path,
    *,
    override: Path | None = None,
    jobs: int = 1,
    on_done: Callable[[Done], None] = lambda done: None,
) -> Outcome:
    """Judge every report folder's run records again into `out/<name>/` (in place when it is already there),
    `jobs` processes at once; nothing of the candidates' runs. The summary is the caller's to write."""
    from concurrent.futures import ProcessPoolExecutor

    folders = report_folders(paths)
    names = [f.name for f in folders]
    if twice := sorted({n for n in names if names.count(n) > 1}):
        raise ManyError(f"--rejudge: two report folders named {twice[0]!r}")
    out.mkdir(parents=True, exist_ok=True)
    outcome = Outcome()
    with ProcessPoolExecutor(max_workers=max(1, min(jobs, len(folders)))) as pool:
        futures = [pool.submit(_rejudge_one, folder, out / folder.name, override) for folder in folders]
        for future in futures:
            done = future.result()
            outcome.done.append(done)
            on_done(done)
    return outcome


def merge(paths: Sequence[Path], out: Path) -> list[Path]:
    """Gather report folders into `out/<name>/`, ready for the summary; returns the folders in `out`.

    A folder already in place is left as it is. One from elsewhere is copied in when `out` has no
    finished grade of that name, or an older report.json, so a person's checklist points recorded
    in `out` survive a second merge, while a newer grade of the same submission replaces the old.
    """
    out.mkdir(parents=True, exist_ok=True)
    seen: dict[str, Path] = {}
    for folder in report_folders(paths):
        if folder.name in seen:
            raise ManyError(f"--merge: two report folders named {folder.name!r}: {seen[folder.name]} and {folder}")
        seen[folder.name] = folder
        target = out / folder.name
        if target.resolve() == folder.resolve():
            continue
        if not finished(folder):
            raise ManyError(f"--merge {folder}: an unfinished grade (a report file is missing or unreadable)")
        source_time = (folder / FILE_NAMES["json"]).stat().st_mtime
        if finished(target) and (target / FILE_NAMES["json"]).stat().st_mtime >= source_time:
            continue
        partial = out / PARTIAL / folder.name
        shutil.rmtree(partial, ignore_errors=True)
        shutil.copytree(folder, partial)
        if target.exists():
            shutil.rmtree(target)
        partial.rename(target)
    return [out / name for name in sorted(seen)]
