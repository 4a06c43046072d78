"""The serving checklist: one module per item, each a `ChecklistItem` with a stable id.

The order here is the order of the report. Ids are part of the grader's contract; rename one
only together with the rubric.
"""

from __future__ import annotations

from . import disruption_budget, gpu, hf_token, max_model_len, memory, model_volume, probes
from .base import ChecklistItem, ManifestSet

__all__ = ["CHECKLIST", "ChecklistItem", "ManifestSet"]

CHECKLIST: tuple[ChecklistItem, ...] = (
    gpu.CHECK,
    probes.READINESS,
    probes.STARTUP,
    disruption_budget.CHECK,
    memory.CHECK,
    model_volume.CHECK,
    hf_token.CHECK,
    max_model_len.CHECK,
)
