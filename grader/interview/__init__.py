"""The second stage's interviewer's guide (`grader interview`), built from a grade's run records."""
