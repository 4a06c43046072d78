"""The rubric's data: the criteria, the load-generator scenarios, the gateway's plan, the sizing input sets,
the unseen variants and their ranges, the time limits. Read from `grader/rubric/rubric.yaml` (and the hidden
material in `grader/unseen/`), checked against its schema, and imported by every part that runs or judges;
it imports none of them.
"""

from grader.rubric.load import (
    DEFAULT_RUBRIC,
    CheckNeeds,
    Criterion,
    Judging,
    Rubric,
    RubricError,
    Scenario,
    TimeLimits,
    load_rubric,
)

__all__ = [
    "DEFAULT_RUBRIC",
    "CheckNeeds",
    "Criterion",
    "Judging",
    "Rubric",
    "RubricError",
    "Scenario",
    "TimeLimits",
    "load_rubric",
]
