"""Filtered (tokenised) code kept on disk by its content, so a round does not tokenise the same files again.

Tokenising with Pygments is most of a similarity check's time, and most of what it tokenises is the same in
every round: the kit's reference and starter, and any submission graded before. The filtered text depends only
on the file's text, its suffix and the two libraries' versions, so it is kept under their digest. The cache is
an aid, never a source of truth: a file that cannot be read or written is tokenised afresh, and nothing is
kept when `GRADER_CACHE_DIR` is set to an empty value.
"""

from __future__ import annotations

import functools
import hashlib
import json
import os
import tempfile
from importlib import metadata
from pathlib import Path

import numpy as np

__all__ = ["cache_dir", "load", "store"]


def cache_dir() -> Path | None:
    """Where filtered texts are kept: `GRADER_CACHE_DIR`, else the user's cache folder (None: keep none)."""
    given = os.environ.get("GRADER_CACHE_DIR")
    if given is not None:
        return Path(given) if given else None
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "serving-takehome-kit" / "filtered"


@functools.cache
def _versions() -> str:
    found = []
    for name in ("copydetect", "pygments"):
        try:
            found.append(f"{name}={metadata.version(name)}")
        except metadata.PackageNotFoundError:
            found.append(f"{name}=?")
    return ",".join(found)


def _path(suffix: str, text: str) -> Path | None:
    folder = cache_dir()
    if folder is None:
        return None
    digest = hashlib.sha256(f"{_versions()}\0{suffix}\0{text}".encode()).hexdigest()
    return folder / digest[:2] / f"{digest}.json"


def load(suffix: str, text: str) -> tuple[str, np.ndarray] | None:
    """The filtered text and its character map kept for this file's text, or None."""
    path = _path(suffix, text)
    if path is None:
        return None
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
        return str(data["filtered"]), np.asarray(data["at"], dtype=np.int64)
    except (OSError, ValueError, KeyError, TypeError):
        return None


def store(suffix: str, text: str, filtered: str, at: np.ndarray) -> None:
    """Keep a file's filtered text (atomically: a reader never sees half a file); a failure keeps nothing."""
    path = _path(suffix, text)
    if path is None:
        return
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        with tempfile.NamedTemporaryFile("w", dir=path.parent, suffix=".tmp", delete=False, encoding="utf-8") as f:
            json.dump({"filtered": filtered, "at": at.tolist()}, f)
        os.replace(f.name, path)
    except OSError:
        return
