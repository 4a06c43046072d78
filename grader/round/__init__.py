"""Grading a round: many submissions at once, on one machine or as a Kubernetes Indexed Job."""
