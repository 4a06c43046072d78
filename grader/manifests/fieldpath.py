"""Field paths as people read them: `spec.containers[0].resources.limits["nvidia.com/gpu"]`."""

from __future__ import annotations

import re
from collections.abc import Sequence

__all__ = ["fmt_path"]

_PLAIN = re.compile(r"^[A-Za-z_][A-Za-z0-9_-]*$")


def fmt_path(path: Sequence[str | int]) -> str:
    """Dotted names, `[i]` for list items, `["key"]` for keys with dots or slashes."""
    out = ""
    for part in path:
        if isinstance(part, int):
            out += f"[{part}]"
        elif _PLAIN.match(part):
            out += f".{part}" if out else part
        else:
            out += f'["{part}"]'
    return out or "(document)"
