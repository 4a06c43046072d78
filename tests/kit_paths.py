"""Where the kit's tests find the repository and their own fixtures, wherever a test file sits below tests/."""

from __future__ import annotations

from pathlib import Path

__all__ = ["ROOT", "TESTS"]

TESTS = Path(__file__).resolve().parent
ROOT = TESTS.parent
