"""`SectionRunner`: run a grade's sections, each in its sandbox, and judge their criteria as their runs come in.

The grade (grading/grade.py) decides what is graded; the runner makes the runs and turns each criterion into a
`CriterionResult`, and hands back a `Ran`: the results, which of them were not judged (a re-judge keeps those as
they are), whether every sandbox isolated, and how long the runs took. Untimed sections run on a thread beside
the timed ones; the timed ones take turns at the sandboxes `--sandboxes` allows (grading/slots.py), longest
first. A section the grader cannot finish leaves its criteria for a person; the rest of the grade goes on.
"""

from __future__ import annotations

import contextlib
import threading
import time
import traceback
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field

from grader.contract import Submission
from grader.criteria.verdict import Verdict
from grader.grading.judging import decide, judge, needs_rerun, result_of, unjudged, with_variants
from grader.grading.request import GradeRequest, UnseenMaterial
from grader.grading.section_runs import SectionRuns
from grader.grading.sections import NO_VARIANTS, SECTIONS, Context, Section
from grader.grading.slots import Slots
from grader.outcome import CriterionResult
from grader.records.book import RecordBook
from grader.rubric import Criterion, Rubric

__all__ = ["LONGEST_FIRST", "Ran", "SectionRunner"]

#: The timed sections in the order they ask for a sandbox. The gateway's cases run one after another, each
#: waiting out the contract's timeouts, whatever the submission; a candidate's tests run their suite several
#: times; the load generator's many short runs come last, so that they can spread over the sandboxes the
#: others leave free (grading/slots.py).
LONGEST_FIRST = ("gateway", "tests", "loadgen")


@dataclass
class Ran:
    """What running the sections gave: every criterion's result, and what the reports say of the runs."""

    results: dict[str, CriterionResult] = field(default_factory=dict)
    not_judged: set[str] = field(default_factory=set)  # results a re-judge keeps as they are
    sandbox_notes: list[tuple[bool, str]] = field(default_factory=list)  # (isolated, the sandbox's line) each
    inherent_s: float = 0.0  # how long the candidate's own commands ran: the part no grader can save
    section_s: dict[str, float] = field(default_factory=dict)  # each section's shared runs

    @property
    def isolated(self) -> bool:
        return all(isolated for isolated, _ in self.sandbox_notes)

    @property
    def sandbox_note(self) -> str:
        """The first sandbox that did not isolate, else the first sandbox's line."""
        notes = self.sandbox_notes
        return next((n for i, n in notes if not i), notes[0][1] if notes else "")


class SectionRunner:
    """Runs the sections of one grade and judges their criteria, reporting each result as it comes."""

    def __init__(
        self,
        request: GradeRequest,
        rubric: Rubric,
        unseen: UnseenMaterial,
        submission: Submission,
        book: RecordBook,
        report: Callable[[CriterionResult], None],
    ) -> None:
        self.request, self.rubric, self.unseen, self.submission = request, rubric, unseen, submission
        self.book, self.report = book, report
        self.ran = Ran()
        self._lock = threading.Lock()
        self._slots = Slots(request.sandboxes)

    def run(self, todo: dict[str, list[Criterion]]) -> Ran:
        """Run every section of `todo` (section name -> its criteria to judge) and judge them."""
        if self.request.by_hand:  # a person starts the commands: here, in turn, and an error is the command's
            for name, criteria in todo.items():
                self._account(name, self._run_and_judge(name, criteria))
            return self.ran
        side = threading.Thread(target=self._untimed, args=(todo,), daemon=True)
        side.start()  # untimed sections (no timing checks) run beside the timed ones, whatever --sandboxes says
        timed = sorted(
            (n for n in todo if SECTIONS[n].timed),
            key=lambda n: (n not in LONGEST_FIRST, LONGEST_FIRST.index(n) if n in LONGEST_FIRST else 0),
        )
        with ThreadPoolExecutor(max_workers=max(1, len(timed))) as pool:
            for future in [pool.submit(self._timed, n, todo[n], self._slots.ask()) for n in timed]:
                future.result()
        side.join()
        return self.ran

    def _untimed(self, todo: dict[str, list[Criterion]]) -> None:
        for name, criteria in todo.items():
            if not SECTIONS[name].timed:
                self._section(name, criteria)

    def _timed(self, name: str, criteria: list[Criterion], ticket: int) -> None:
        with self._slots.held(ticket):
            self._section(name, criteria)

    def _record(self, result: CriterionResult, *, judged: bool = True) -> None:
        with self._lock:
            self.ran.results[result.id] = result
            if not judged:
                self.ran.not_judged.add(result.id)
        self.report(result)

    def _leave_for_a_person(self, criteria: list[Criterion], why: str, logs: str = "") -> None:
        for criterion in criteria:
            if criterion.id not in self.ran.results:
                self._record(unjudged(criterion, why, logs=logs), judged=False)

    def _section(self, name: str, criteria: list[Criterion]) -> None:
        from grader.sandbox import SandboxRefused

        try:
            live = self._run_and_judge(name, criteria)
        except SandboxRefused as exc:  # nothing of the candidate's ran: one line says why and what to change
            with self._lock:
                self.ran.sandbox_notes.append((False, f"NOT GRADED: {exc}"))
            self._leave_for_a_person(criteria, f"the {name} section was not graded: {exc}")
            return
        except Exception as exc:  # noqa: BLE001 - the grader's own failure: the rest of the grade goes on
            why = f"the grader could not finish the {name} section ({type(exc).__name__}: {exc}); a person should look"
            self._leave_for_a_person(criteria, why, traceback.format_exc())
            return
        self._account(name, live)

    def _account(self, name: str, live: SectionRuns) -> None:
        """What the section's runs cost: the candidate's own time, and the runs its criteria shared."""
        with self._lock:
            self.ran.inherent_s += live.inherent
            self.ran.section_s[name] = round(live.shared_s, 3)
        if live.shared_s:
            self.request.echo(f"{'':<12} the {name} section's runs: {live.shared_s:.1f} s, shared by its criteria")

    def _run_and_judge(self, name: str, criteria: list[Criterion]) -> SectionRuns:
        from grader.sandbox import Sandbox

        section, request, folder = SECTIONS[name], self.request, self.submission.folder
        open_box = request.open_box or Sandbox
        ctx = Context(
            self.submission,
            self.rubric,
            request.seed,
            criteria,
            sizing=self.unseen.sizing,
            variants=self.unseen.variants,
            open_box=lambda: open_box(folder),
            spread=request.runs_at_once,
        )
        varied = self.unseen.variants.varied if self.unseen.variants is not None else NO_VARIANTS
        with open_box(folder) if section.boxed else contextlib.nullcontext() as box:
            if box is not None:
                with self._lock:
                    self.ran.sandbox_notes.append((box.isolated, box.note))
            ctx.box = box
            # a grade's timed section spreads its first runs over the sandboxes free (a replay spreads its own);
            # with one sandbox none is ever free, and each run is made on first need, as it is printed
            lend = self._slots if section.timed and request.runs_at_once == 1 and request.sandboxes > 1 else None
            live = SectionRuns(section, ctx, self.book, varied, slots=lend)
            live.make_first_runs(criteria)
            for criterion in criteria:
                self._judge(section, criterion, live)
        return live

    def _judge(self, section: Section, criterion: Criterion, live: SectionRuns) -> None:
        started, shared = time.perf_counter(), live.shared_s
        first = self._attempt(section, criterion, live, 1)
        if first is None:
            why = f"the grader made no run that covers {criterion.id}; a person should look"
            self._record(unjudged(criterion, why), judged=False)
            return
        # a borderline answer: its runs are made again here, and judged as attempt 2
        rerun = not self.request.by_hand and needs_rerun(first, self.rubric)
        second = self._attempt(section, criterion, live, 2) if rerun else None
        decision = decide(first, second, self.rubric)
        # its own time: the runs it read (each counted for every criterion that read it), judging it, and its reruns'
        # judging; the section's shared time is reported once, by the section
        took = time.perf_counter() - started - (live.shared_s - shared)
        took += sum(_runs_s(section, criterion, live, attempt) for attempt in range(1, decision.attempts + 1))
        self._record(result_of(criterion, decision, duration_s=took))

    def _attempt(self, section: Section, criterion: Criterion, live: SectionRuns, attempt: int) -> Verdict | None:
        """The verdict of `criterion` at `attempt`, its runs made first if they are not yet."""
        objects = live.objects(criterion, attempt)
        verdict = judge(criterion, section, objects, self.rubric) if objects is not None else None
        if verdict is None:  # its runs do not cover it: no unseen variant's runs are made for it either
            return None
        return with_variants(verdict, section, self.rubric, live.variant(criterion, attempt))


def _runs_s(section: Section, criterion: Criterion, live: SectionRuns, attempt: int) -> float:
    """How long the runs a criterion was judged from at `attempt` took: its public runs and its unseen variants'
    (all of them already made and loaded: this runs nothing)."""
    objects = live.objects(criterion, attempt)
    found = live.variant(criterion, attempt)
    own = section.own_s(objects, criterion) if objects is not None else 0.0
    return own + (section.own_s(found[1], found[0]) if found is not None else 0.0)
