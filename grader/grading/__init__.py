"""Grading one submission: the rubric, the sections, the grade and what it is made of."""
