"""Benchmarks of the kit; each records its figures, side by side, with the command that made them."""
