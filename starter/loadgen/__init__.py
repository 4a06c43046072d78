"""Your load generator, as a package: keep this file so `loadgen.loadgen` imports from anywhere (TASK.md)."""
