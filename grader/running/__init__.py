"""Running: what each section runs in the sandbox, kept as run records for the criteria to judge."""
