"""The grader's rooms (its subpackages and top-level modules), floor by floor, each with its job.

A room may import rooms on lower floors only, never its own floor's neighbours or anything above:
tests/kit/test_grader_layering.py reads every import (those inside functions too) and holds the code to
this, and docs/architecture.md shows it (generated: `python -m grader.kit.generated --write`).
"""

from __future__ import annotations

__all__ = ["FLOORS"]

#: Lowest first: (room, its job), by floor.
FLOORS: tuple[tuple[tuple[str, str], ...], ...] = (
    (
        ("__init__", "the package: its version, and nothing that imports"),
        ("shared", "helpers every room uses: where the kit's files are, the one YAML reader, schema errors in words"),
    ),
    (
        ("contract", "the submission contract: its schemas, `submission.yaml`, violations by field"),
        ("manifests", "the offline manifest checker (`grader manifests`)"),
        (
            "rubric",
            "the rubric's data: criteria, scenarios, the gateway's plan, sizing sets, variants, domains; the question bank and live pool",
        ),
        ("outcome", "what a grade is: `Grade`, `CriterionResult`, `Evidence`, `Plot`"),
    ),
    (
        ("records", "run records: each run's raw facts, and the book that keeps them beside a report"),
        ("sandbox", "the bubblewrap namespace, its harness, and the limits it enforces"),
        ("reports", "a grade's reports: report.json, junit.xml, report.html, the terminal table"),
    ),
    (
        ("criteria", "judging: pure checks of run records, one registry"),
        ("running", "running: what each section runs in the sandbox, kept as a record"),
    ),
    (("grading", "grading one submission: sections, the grade, rerun and inconclusive, rejudge, replay"),),
    (
        ("kit", "building and proving the kit: bundle, schemas, chaff, selftest, traceability, generated texts"),
        ("candidate", "the candidate's own checks: `grader check`, `grader memo`"),
    ),
    (("round", "grading a round: in parallel, its seed, its summary pages, similarity, item analysis, blind review"),),
    (
        ("interview", "the interviewer's guide: verdicts, closest calls and questions from a grade's records"),
        ("live", "live exercises: a situation the grade never ran, in front of the candidate's own code"),
    ),
    (
        (
            "review",
            (
                "the hiring team's round in a browser (`grader review`): the ranking, the guide beside its scoring "
                "sheet, decisions, live exercises, blind review"
            ),
        ),
    ),
    (("cli", "the `grader` command: one module per command family; each command parses and calls"),),
)
