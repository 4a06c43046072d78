"""Spins forever (the CPU limit or the wall clock must end it). At the lowest priority: what it tests
is the grader's limits, not how the machine copes, so it leaves the cores to any other work."""

import os

os.nice(19)
while True:
    pass
