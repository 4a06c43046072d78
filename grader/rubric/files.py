"""Where the kit's rubric lies: read by the loader, and by the editions for the sizing check's perturbed values."""

from __future__ import annotations

from pathlib import Path

__all__ = ["DEFAULT_RUBRIC"]

DEFAULT_RUBRIC = Path(__file__).resolve().parent / "rubric.yaml"
