"""`grader selftest`: prove the grader grades right, on submissions whose grades are known.

The reference ("wheat") must score full marks. Each chaff is the reference with one known defect
and names the criteria it must lose: it must lose each of them (score below the weight) and
nothing else. By default a chaff is graded on its targets, on every criterion that comes free
with the scenario runs its targets need, and on a seeded sample of two more; `--full` grades
every chaff on every criterion. The unseen variants (rubric/variants.py) run for the reference,
for a chaff that loses its targets only on them (`unseen: true`) and with `--full`: a variant run
costs as much as the public one, and a chaff that breaks a public rule breaks it on the public run.
A chaff graded wrong is graded once more: wrong twice is wrong, right the second time is reported
as unstable with what the first grading said. `shard=(i, n)` grades every n-th submission from the
i-th (the reference first), so n machines or CI jobs share one selftest; `sample=(k, seed)` grades the
reference and k chaff drawn by that seed (`draw_sample`), so a short selftest run often enough grades every
chaff live in time, and says which it drew.
"""

from __future__ import annotations

import random
import shutil
import tempfile
import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

from grader.grading.grade import GradeRequest, grade
from grader.outcome import CriterionResult, Grade
from grader.rubric import Criterion, Rubric, load_rubric
from grader.shared.kit_files import submissions_dir

__all__ = [
    "SUBMISSIONS",
    "SelftestError",
    "SelftestOutcome",
    "draw_sample",
    "selftest",
    "summary_line",
]

SUBMISSIONS = submissions_dir()


class SelftestError(RuntimeError):
    """The selftest cannot run at all (no submissions folder, a chaff that does not build)."""


@dataclass
class SelftestOutcome:
    name: str  # "reference" or the chaff's name
    ok: bool
    lines: list[str] = field(default_factory=list)  # what was wrong, criterion by criterion
    inconclusive: list[str] = field(default_factory=list)  # criteria the grader could not tell
    unstable: list[str] = field(default_factory=list)  # wrong at first, right when graded again
    score: float = 0.0
    max_score: float = 0.0
    seconds: float = 0.0


def _runs_of(criterion: Criterion) -> frozenset[str] | None:
    """The runs a criterion is judged from (scenarios, gateway cases); None: every run of its section."""
    if criterion.deliverable == "gateway":
        return frozenset(f"case {c}" for c in criterion.cases) if criterion.cases else None
    return frozenset(criterion.scenarios) if criterion.scenarios else None


def _criteria_for(rubric: Rubric, targets: list[str], name: str, full: bool) -> tuple[str, ...]:
    """The criteria a chaff is graded on: its targets, what their runs give for free, and a sample.

    A scenario run (or a gateway case) feeds every criterion judged from it, so those cost
    nothing more; a target judged from every run of its section makes the whole section free.
    The sample comes from the targets' own deliverables and never includes the test-suite chaff
    criteria (each a handful of full test runs) nor a gateway check over every case (a whole
    gateway run); `--full` covers everything.
    """
    if full:
        return tuple(c.id for c in rubric.criteria)
    chosen = [c for c in rubric.criteria if c.id in targets]
    deliverables = {c.deliverable for c in chosen}
    runs = {r for c in chosen for r in (_runs_of(c) or ())}
    whole = {c.deliverable for c in chosen if _runs_of(c) is None and c.deliverable != "tests"}
    free = {c.id for c in rubric.criteria if c.deliverable in whole or ((r := _runs_of(c)) is not None and r <= runs)}
    if "tests" in deliverables:
        free.add("tests.pass")
    expensive = {"tests.percentile-chaff", "tests.slot-chaff"}
    taken = {c.id for c in chosen} | free
    # The sample leaves out criteria judged from every run of a section (they would rerun it whole).
    rest = sorted(
        c.id
        for c in rubric.criteria
        if c.deliverable in deliverables
        and c.id not in taken | expensive
        and (c.deliverable != "gateway" or _runs_of(c) is not None)
    )
    sample = random.Random(name).sample(rest, k=min(2, len(rest)))
    return tuple(c.id for c in rubric.criteria if c.id in taken | set(sample))


def draw_sample(names: list[str], k: int, seed: int) -> list[str]:
    """k of these chaff names drawn by `seed`, in their listed order: the same seed draws the same k."""
    return sorted(random.Random(f"selftest-sample-{seed}").sample(sorted(names), k=min(k, len(names))))


def _set_aside(folder: Path, to: Path) -> None:
    """Move a grading's folder out of the way of the next one (replacing an older one set aside there)."""
    if folder.is_dir():
        shutil.rmtree(to, ignore_errors=True)
        folder.rename(to)


def kept(c: CriterionResult) -> bool:
    """A target the submission did not lose: full points, or passed where there are none to lose."""
    return c.status == "passed" if c.weight == 0 else c.score >= c.weight


def _judge(name: str, result: Grade, targets: list[str] | None) -> SelftestOutcome:
    """Wrong is a target kept or another criterion lost (`targets` None: any point scored). `inconclusive`
    is neither: it is the grader saying it could not tell (a machine too busy to time), so it is
    listed, not failed. On the reference, which must be graded whole, only a verdict withheld because the
    machine was too busy to keep time is listed so: one withheld on a machine that kept time is wrong."""
    finding = SelftestOutcome(name, True, score=result.score, max_score=result.max_score, seconds=result.duration_s)
    for c in result.criteria:
        first = " ".join(c.output.splitlines()[:2]) if c.output else ""
        if targets is None:
            if c.score > 0:
                finding.ok = False
                finding.lines.append(
                    f"{c.id}: should score nothing, but {c.status} ({c.score:g}/{c.weight:g}): {first}"
                )
        elif c.status == "inconclusive" and (name != "reference" or c.busy):
            finding.inconclusive.append(c.id)
            finding.lines.append(f"{c.id}: inconclusive (not counted as wrong): {first}")
        elif c.id in targets and kept(c):
            finding.ok = False
            finding.lines.append(f"{c.id}: should be lost, but {c.status} ({c.score:g}/{c.weight:g})")
        elif c.id not in targets and c.status != "passed":
            finding.ok = False
            finding.lines.append(f"{c.id}: should pass, but {c.status} ({c.score:g}/{c.weight:g}): {first}")
    return finding


def _graded(
    name: str,
    folder: Path,
    targets: list[str] | None,
    variants: bool,
    *,
    rubric: Rubric,
    full: bool,
    seed: int,
    outs: Path,
) -> SelftestOutcome:
    """One submission graded and judged (`targets` None: on every criterion, to score nothing), in `outs/NAME`.
    Graded wrong once, it is graded again: wrong twice is wrong; right the second time is listed as unstable,
    with what the first grading said, for a person to follow up. The first grading's records stay beside the
    second's (NAME-first-grading/): they are what shows why it went wrong."""
    whole = name == "reference" or targets is None  # graded on every criterion
    only = () if whole else _criteria_for(rubric, targets or [], name, full)

    def quiet(_: str) -> None:
        return None

    # The reference has every timed section: two at once; a chaff usually has one.
    first = GradeRequest(
        folder, outs / name, only=only, seed=seed, echo=quiet, sandboxes=2 if whole else 1, with_variants=variants
    )
    finding = _judge(name, grade(first), targets)
    if finding.ok:
        return finding
    _set_aside(outs / name, outs / f"{name}-first-grading")
    again = _judge(
        name,
        grade(GradeRequest(folder, outs / name, only=only, seed=seed, echo=quiet, with_variants=variants)),
        targets,
    )
    if again.ok:
        again.unstable = [f"first grading: {line}" for line in finding.lines]
        again.lines = again.unstable + again.lines
    return again


def selftest(
    *,
    full: bool = False,
    jobs: int = 2,
    names: tuple[str, ...] = (),
    seed: int = 0,
    echo: Callable[[str], None] = print,
    root: Path = SUBMISSIONS,
    keep: Path | None = None,
    shard: tuple[int, int] = (1, 1),
    sample: tuple[int, int] | None = None,
) -> list[SelftestOutcome]:
    """Grade the reference and every chaff (or those named, or `sample`'s draw); one SelftestOutcome each. `keep`: a
    folder to keep each grade's reports and run records in (`keep/NAME/`; one graded twice keeps its
    first grading beside, in `keep/NAME-first-grading/`)."""
    from grader.kit.chaff import ChaffError, list_chaff, materialize

    if not (root / "reference" / "submission.yaml").is_file():
        raise SelftestError(f"{root}: no reference submission here; the selftest runs from the kit's checkout")
    rubric = load_rubric()
    chaff = [c for c in list_chaff(root / "chaff") if not names or c.name in names]
    if sample is not None:
        drawn = draw_sample([c.name for c in chaff], *sample)
        echo(f"sample: {len(drawn)} of {len(chaff)} chaff drawn with seed {sample[1]}: {', '.join(drawn)}")
        chaff = [c for c in chaff if c.name in drawn]
    lock = threading.Lock()
    findings: list[SelftestOutcome] = []

    with tempfile.TemporaryDirectory(prefix="grader-selftest-") as tmp:

        def one(name: str, folder: Path | None, targets: list[str] | None, variants: bool) -> None:
            try:
                if folder is None:
                    folder = materialize(next(c.path for c in chaff if c.name == name), Path(tmp) / "chaff" / name)
            except ChaffError as exc:
                finding = SelftestOutcome(name, False, [f"does not build: {exc}"])
            else:
                outs = keep if keep is not None else Path(tmp) / "out"
                finding = _graded(name, folder, targets, variants, rubric=rubric, full=full, seed=seed, outs=outs)
            with lock:
                findings.append(finding)
                mark = "ok  " if finding.ok else "FAIL"
                echo(f"{mark} {name:<28} {finding.score:g}/{finding.max_score:g}  ({finding.seconds:.1f} s)")
                for line in finding.lines:
                    echo(f"       {line}")

        jobs_list: list[tuple[str, Path | None, list[str] | None, bool]] = []
        if not names or "reference" in names:
            jobs_list.append(("reference", root / "reference", [], True))
        jobs_list += [(c.name, None, None if c.scores_nothing else list(c.targets), full or c.unseen) for c in chaff]
        index, count = shard
        jobs_list = jobs_list[index - 1 :: count]
        with ThreadPoolExecutor(max_workers=max(1, jobs)) as pool:
            for future in [pool.submit(one, *job) for job in jobs_list]:
                future.result()
    order = {name: i for i, (name, *_) in enumerate(jobs_list)}
    return sorted(findings, key=lambda f: order[f.name])


def summary_line(findings: list[SelftestOutcome]) -> str:
    """One line for the end of a selftest: how many were graded as expected, and which were not."""
    bad = [f.name for f in findings if not f.ok]
    unsure = sum(len(f.inconclusive) for f in findings)
    unstable = [f.name for f in findings if f.unstable]
    return (
        f"{len(findings) - len(bad)} of {len(findings)} graded as expected"
        + (f"; wrong: {', '.join(bad)}" if bad else "")
        + (f"; {unsure} criteria inconclusive (a busy machine?)" if unsure else "")
        + (f"; right only when graded again: {', '.join(unstable)}" if unstable else "")
    )
