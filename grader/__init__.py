"""The kit's grader: the rubric, the sandbox, the criteria and the reports (`grader`); grader/README.md maps it."""
