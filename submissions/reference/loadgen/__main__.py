"""`python -m loadgen`: the command line of cli.py."""

from .cli import main

main()
