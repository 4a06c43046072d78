"""The rubric's data: the criteria, the load-generator scenarios, the gateway's plan, the sizing input sets,
the hidden variants and their ranges, the time limits. Read from `grader/rubric.yaml` (and the hidden
material in `grader/hidden/`), checked against its schema, and imported by every part that runs or judges;
it imports none of them.
"""

from grader.rubric.load import (
    DEFAULT_RUBRIC,
    CheckNeeds,
    Criterion,
    Judging,
    Limits,
    Rubric,
    RubricError,
    Scenario,
    load_rubric,
)

__all__ = [
    "DEFAULT_RUBRIC",
    "CheckNeeds",
    "Criterion",
    "Judging",
    "Limits",
    "Rubric",
    "RubricError",
    "Scenario",
    "load_rubric",
]
