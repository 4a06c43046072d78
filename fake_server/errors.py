"""The error every settings check raises, in a module of its own so that any module may raise it."""

from __future__ import annotations

__all__ = ["SettingsError"]


class SettingsError(ValueError):
    """A setting is unknown, of the wrong type or out of range; the message names it."""
