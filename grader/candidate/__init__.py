"""The candidate's own checks: `grader check` and `grader memo`."""
