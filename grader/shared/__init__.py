"""Helpers every part of the grader uses: where the kit's files are, schema errors in words."""
