"""The repository stands alone: no file refers to a design note, a path or a link outside it."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

from kit_paths import ROOT

# Built from pieces so that this file does not match itself.
_OUTSIDE = [
    re.compile(p)
    for p in (
        r"DESIGN" + r"\.md",
        r"\.\./" + r"shared",
        r"/work" + r"/(main|shared)\b",  # the checkout and the notes it was built from
        r"/tmp/" + r"brief",
    )
]
_LINK = re.compile(r"\]\(([^)\s#]+)(?:#[^)]*)?\)")


def _tracked_text_files() -> list[Path]:
    names = subprocess.run(["git", "ls-files", "-z"], cwd=ROOT, capture_output=True, text=True, check=True).stdout
    out = []
    for name in filter(None, names.split("\0")):
        path = ROOT / name
        if path.is_file() and not name.startswith("schemas/v1") and path.suffix not in (".png", ".whl", ".gz"):
            out.append(path)
    return out


def test_no_file_refers_outside_the_repository() -> None:
    found = []
    for path in _tracked_text_files():
        try:
            text = path.read_text(encoding="utf-8")
        except UnicodeDecodeError:
            continue
        for number, line in enumerate(text.splitlines(), start=1):
            if any(p.search(line) for p in _OUTSIDE):
                found.append(f"{path.relative_to(ROOT)}:{number}: {line.strip()[:100]}")
    assert not found, "references outside the repository:\n" + "\n".join(found)


def test_every_relative_markdown_link_resolves_inside_the_repository() -> None:
    broken = []
    for path in _tracked_text_files():
        if path.suffix != ".md":
            continue
        for target in _LINK.findall(path.read_text(encoding="utf-8")):
            if re.match(r"^[a-z]+:", target):
                continue  # http:, https:, mailto:
            resolved = (path.parent / target).resolve()
            if not resolved.is_relative_to(ROOT) or not resolved.exists():
                broken.append(f"{path.relative_to(ROOT)}: ({target})")
    assert not broken, "links that leave the repository or lead nowhere:\n" + "\n".join(broken)


def test_the_package_metadata_points_only_inside(tmp_path: Path) -> None:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")  # the wheel's long description
    assert "../" not in "".join(_LINK.findall(readme))
