"""The load generator's own tests. Run from the submission folder: `python -m pytest -q loadgen/tests`."""
