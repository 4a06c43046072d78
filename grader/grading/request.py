"""What a grade is asked (`GradeRequest`) and the unseen material it runs besides the public (`UnseenMaterial`).

Apart from grading/grade.py so that the section runner (grading/runner.py) reads them without importing the grade.
"""

from __future__ import annotations

from collections.abc import Callable
from contextlib import AbstractContextManager
from dataclasses import dataclass
from pathlib import Path

from grader.rubric import Rubric, RubricError
from grader.rubric.sizing_plan import SizingPlan
from grader.rubric.variants import Variants, VariantsError, load_variants
from grader.sandbox.box_api import Box

__all__ = ["GradeRequest", "UnseenMaterial", "unseen_material"]


@dataclass(frozen=True)
class GradeRequest:
    """What a grade is asked to do; `grade` answers it with a `Grade` (grader/outcome.py)."""

    submission: Path
    out: Path
    only: tuple[str, ...] = ()
    seed: int = 0
    rubric: Path | None = None
    override: Path | None = None
    sandboxes: int = 1  # timed sections graded at once, each in a sandbox of its own
    echo: Callable[[str], None] = print
    public_only: bool = False  # `grader check`: only criteria the candidate may see, and the reports say so
    cases: tuple[str, ...] = ()  # `grader replay --case`: the gateway criteria judge these cases alone
    scenarios: tuple[str, ...] = ()  # `grader replay --scenario`: the load-generator criteria judge these alone
    with_variants: bool = True  # run the unseen variants when the kit has them (bench/grade_time.py compares)
    runs_at_once: int = 1  # `grader replay`: a criterion's runs made this many at once, each in a sandbox of its own
    edition: str = ""  # the edition to grade against, whatever the submission's stamp says ("": the stamp's)
    # where a section's commands run, opened on the submission's folder (None: a sandbox); a live exercise run by
    # hand gives a box whose commands the candidate starts (grader/live/hand_box.py)
    open_box: Callable[[Path], AbstractContextManager[Box]] | None = None
    # a live exercise run by hand: made once (no reruns), its sections on the calling thread one after another (so
    # Ctrl-C stops it while the candidate is waited for), and the grader's own errors raised to the command
    by_hand: bool = False


@dataclass(frozen=True)
class UnseenMaterial:
    """The unseen material a grade runs besides the public: the sizing input sets (the rubric's and the unseen
    ones) and the variants of the scenarios and cases (None: none)."""

    sizing: SizingPlan
    variants: Variants | None
    missing: str  # what the reports should say is missing from this kit ("" when nothing is)


def unseen_material(request: GradeRequest, rubric: Rubric) -> UnseenMaterial:
    """The unseen material `request` runs: none for `grader check`, none in a candidate's kit."""
    if request.public_only:
        return UnseenMaterial(rubric.sizing, None, "")
    try:
        sizing = rubric.sizing.with_hidden()
        variants = load_variants(rubric) if request.with_variants else None
    except (ValueError, VariantsError) as exc:
        raise RubricError(str(exc)) from None
    if not sizing.unseen and variants is None:
        return UnseenMaterial(
            sizing, variants, " (no unseen material in this kit: public input sets and scenarios only)"
        )
    return UnseenMaterial(sizing, variants, "")
