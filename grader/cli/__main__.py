"""`python -m grader.cli`: the `grader` command."""

from grader.cli import main

main()
