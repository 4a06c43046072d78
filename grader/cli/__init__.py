"""The `grader` command: a click group whose commands live one family to a module (as pip's `commands/`).

Each command parses its arguments and calls one library function; errors become one line naming the
file, field or flag (exit status 2 for bad usage and missing paths).
"""

from __future__ import annotations

import click

from grader.cli.candidate import check, contract, manifests, memo
from grader.cli.grading import grade, rejudge, replay
from grader.cli.interview import interview, live
from grader.cli.kit import bundle, selftest
from grader.cli.review import review
from grader.cli.round import grade_many, human_score

__all__ = ["main"]


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="serving-takehome-kit", prog_name="grader", message="%(prog)s %(version)s")
def main() -> None:
    """Grade take-home submissions for LLM serving engineers."""


for command in (
    manifests,
    contract,
    grade,
    rejudge,
    replay,
    selftest,
    check,
    memo,
    bundle,
    grade_many,
    human_score,
    interview,
    live,
    review,
):
    main.add_command(command)
