"""A section's runs during a grade: made on first need, recorded, and judged from the record read back.

Nothing a check reads exists only in memory: each run's facts go into the record book and the check
gets the object loaded from that record, as `grader rejudge` will. A grade makes a section's runs
one after another in the section's sandbox, and, when the grade has a sandbox free (grading/slots.py),
makes the first runs of every criterion up front, the rest of them in a borrowed sandbox beside its own.
A replay may spread them (`Context.spread`): the runs a criterion needs, its unseen variants' with them,
made several at once, each further worker in a sandbox of its own (a network of its own, so the same
ports do not clash). What is recorded does not depend on which sandbox made which run: the records are
added in the order the criteria ask for them, as when each run is made on first need.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import replace
from typing import Any

from grader.grading.judging import Variant
from grader.grading.sections import Context, Section, Varied
from grader.grading.slots import Slots
from grader.records.book import RecordBook
from grader.rubric import Criterion
from grader.sandbox.box_api import Box

__all__ = ["SectionRuns"]


class SectionRuns:
    def __init__(
        self, section: Section, ctx: Context, book: RecordBook, varied: Varied, slots: Slots | None = None
    ) -> None:
        self.section, self.ctx, self.book, self.varied = section, ctx, book, varied
        self.slots = slots  # the grade's sandboxes for timed work, to borrow a free one from
        self.made: dict[str, dict[str, Any]] = {}  # facts made up front, recorded when first asked for
        self.loaded: dict[str, Any] = {}
        self.inherent = 0.0
        self.shared_s = 0.0  # time spent making first attempts: runs every criterion of the section may read

    def _objects(self, keys: tuple[str, ...], attempt: int) -> list[Any]:
        started = time.perf_counter()
        try:
            return self._made(keys, attempt)
        finally:
            if attempt == 1:  # a rerun is the criterion's own; a first attempt is the section's
                self.shared_s += time.perf_counter() - started

    def make_first_runs(self, criteria: list[Criterion]) -> None:
        """Make the first run of every key these criteria read, their variants' too, before any is judged,
        in the section's sandbox and in any the grade lends while runs are left: a section's runs spread
        over sandboxes that would otherwise stand idle. Nothing is recorded until a criterion asks."""
        if self.slots is None or not self.section.boxed or self.ctx.open_box is None:
            return
        keys: dict[str, None] = {}
        for criterion in criteria:
            keys.update(dict.fromkeys(self.section.keys(criterion, 1) or ()))
            keys.update(dict.fromkeys(self.section.variant_keys(criterion, 1, self.varied)))
        if len(keys) < 2:
            return
        started = time.perf_counter()
        self.made = self._made_at_once(list(keys), borrow=self.slots)
        self.shared_s += time.perf_counter() - started

    def _made(self, keys: tuple[str, ...], attempt: int) -> list[Any]:
        missing = [key for key in dict.fromkeys(keys) if key not in self.loaded]
        unmade = [key for key in missing if key not in self.made]
        spread = self.section.boxed and self.ctx.open_box is not None and self.ctx.spread > 1 and len(unmade) > 1
        made = {**self.made, **(self._made_at_once(unmade) if spread else {})}
        for key in missing:
            facts = made[key] if key in made else self.section.run(self.ctx, key)
            self.made.pop(key, None)
            record = self.book.add(key, self.section.name, attempt, facts)
            self.loaded[key] = self.section.load(json.loads(json.dumps(record)))
            self.inherent += self.section.inherent(self.loaded[key])
        return [self.loaded[k] for k in keys]

    def _made_at_once(self, keys: list[str], borrow: Slots | None = None) -> dict[str, dict[str, Any]]:
        """The facts of each key's run, the longest expected first (so no long run starts last): one worker in
        the section's sandbox, each other in one it opens, `ctx.spread` workers in all, or as many as `borrow`
        lends while runs are left. Time spent on commands that hang counts against the section's budget once
        all have ended (a run that starts beside a hanging one does not see its wait)."""
        todo = sorted(keys, key=lambda key: -self.section.expected_s(self.ctx, key))
        lock = threading.Lock()
        made: dict[str, dict[str, Any]] = {}
        hung: list[float] = []

        def work(box: Box | None) -> None:
            ctx = replace(self.ctx, box=box)
            while True:
                with lock:
                    if not todo:
                        break
                    key = todo.pop(0)
                made[key] = self.section.run(ctx, key)
            with lock:
                hung.append(ctx.hung_s - self.ctx.hung_s)

        def in_a_box_of_its_own() -> None:
            assert self.ctx.open_box is not None
            with self.ctx.open_box() as box:
                work(box)

        if borrow is not None:
            self._with_borrowed(work, in_a_box_of_its_own, borrow, lambda: not todo)
        else:
            workers = min(self.ctx.spread, len(keys))
            with ThreadPoolExecutor(max_workers=workers) as pool:
                futures = [pool.submit(work, self.ctx.box)]
                futures += [pool.submit(in_a_box_of_its_own) for _ in range(workers - 1)]
                for future in futures:
                    future.result()
        self.ctx.hung_s += sum(hung)
        return made

    def _with_borrowed(
        self,
        work: Callable[[Box | None], None],
        in_a_box_of_its_own: Callable[[], None],
        borrow: Slots,
        done: Callable[[], bool],
    ) -> None:
        """`work` in the section's sandbox, and a worker in a sandbox of its own for each slot lent before
        the runs are all taken; a worker's failure is raised here, once every worker has ended."""
        failures: list[BaseException] = []
        workers: list[threading.Thread] = []
        stop = threading.Event()

        def lent() -> None:
            try:
                in_a_box_of_its_own()
            except BaseException as exc:  # noqa: BLE001 - raised in the section's thread below
                failures.append(exc)
            finally:
                borrow.give()

        def recruit() -> None:
            while borrow.borrow(lambda: done() or stop.is_set()):
                worker = threading.Thread(target=lent, name=f"{self.section.name}-lent", daemon=True)
                workers.append(worker)
                worker.start()

        recruiter = threading.Thread(target=recruit, name=f"{self.section.name}-borrow", daemon=True)
        recruiter.start()
        try:
            work(self.ctx.box)
        finally:
            stop.set()
            recruiter.join()
            for worker in workers:
                worker.join()
        if failures:
            raise failures[0]

    def objects(self, criterion: Criterion, attempt: int) -> list[Any] | None:
        """The objects `criterion` is judged from at `attempt`, its runs made first if they are not yet (attempt 2:
        the rerun); None when the section has no such attempt."""
        keys = self.section.keys(criterion, attempt)
        if keys is None:
            return None
        if self.ctx.spread > 1:  # the unseen variants' runs beside the public ones
            self._objects(keys + self.section.variant_keys(criterion, attempt, self.varied), attempt)
        return self._objects(keys, attempt)

    def variant(self, criterion: Criterion, attempt: int) -> Variant | None:
        """The unseen variants' runs of `criterion` at `attempt` (made first if need be), with the criterion as
        judged on them; None: no variant covers it."""
        keys = self.section.variant_keys(criterion, attempt, self.varied)
        if not keys:
            return None
        objects = self._objects(keys, attempt)
        judged = self.section.variant_criterion(criterion, objects)
        return None if judged is None else (judged, objects)
