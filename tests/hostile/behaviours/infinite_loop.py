"""Spins forever (the CPU limit or the wall clock must end it)."""

while True:
    pass
