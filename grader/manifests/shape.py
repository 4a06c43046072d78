"""Tolerant access to manifest data. The checklist also runs on documents the schema rejected
(so every problem is reported in one run), where any field may have the wrong type; these
helpers turn a wrong type into "absent" instead of an exception."""

from __future__ import annotations

from typing import Any

__all__ = ["as_dict", "as_list", "dicts"]


def as_dict(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def as_list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []


def dicts(value: Any) -> list[dict[str, Any]]:
    """The mapping items of a list (an `env`, `ports` or `volumes` list)."""
    return [item for item in as_list(value) if isinstance(item, dict)]
