"""Chaff: known-defective submissions, each a copy of a good one with a few exact text edits.

A chaff lives in `submissions/chaff/NAME/chaff.yaml`:

    base: reference               # a folder beside chaff/ under submissions/
    defect: TTFT stopped by the role-only chunk
    targets: [loadgen.role-chunk] # the rubric criteria it must lose, and only those
    edits:                        # applied in order to a copy of the base
      - file: loadgen/stream.py
        find: |                   # exact text; must occur exactly once in the file as edited so far
          ...
        replace: |
          ...

Edits are find-and-replace rather than diffs so that a chaff states its defect in the words of
the code, and so that a change to the base that moves the text breaks the chaff loudly (the find
no longer occurs) instead of applying it somewhere else.

A chaff fitted to the public scenarios' constants (a timeout of 0.5 s whatever the config says)
loses its targets only on the unseen variants (rubric/variants.py); it says `unseen: true`, and the
selftest grades it with the variants, which every other chaff is graded without.

One chaff is the candidate's untouched starter: `base: starter`, `edits: []`, `targets: all`. It
must score nothing on any criterion: a rule that holds for want of anything to judge earns nothing.
"""

from __future__ import annotations

import re
import shutil
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Any

from grader.shared.yaml_files import YamlError, read_yaml

__all__ = ["Chaff", "ChaffError", "Edit", "edited", "list_chaff", "materialize", "read_chaff"]

_CRITERION = re.compile(r"^[a-z][a-z0-9-]*(\.[a-z0-9][a-z0-9-]*)+$")
_KEYS = {"base", "defect", "targets", "edits"}
_OPTIONAL = {"unseen"}
_EDIT_KEYS = {"file", "find", "replace"}
_NOT_COPIED = shutil.ignore_patterns("__pycache__", "*.pyc", ".pytest_cache", ".mypy_cache", ".ruff_cache")


class ChaffError(ValueError):
    """A chaff that cannot be read or built; the message names the chaff, the field and the edit."""


@dataclass(frozen=True)
class Edit:
    file: str  # relative to the submission, POSIX separators
    find: str
    replace: str


@dataclass(frozen=True)
class Chaff:
    name: str
    defect: str
    targets: tuple[str, ...]  # empty with `targets: all`: every criterion must score nothing
    path: Path  # the chaff's folder (holding chaff.yaml)
    base: str
    edits: tuple[Edit, ...]
    unseen: bool = False  # it loses its targets only on the unseen variants

    @property
    def scores_nothing(self) -> bool:
        """`targets: all`: the submission must score 0 on every criterion (the untouched starter)."""
        return not self.targets

    @property
    def base_path(self) -> Path:
        """A folder beside chaff/ under submissions/, or `starter`: the kit's starter folder, untouched."""
        submissions = self.path.parent.parent
        return submissions.parent / "starter" if self.base == "starter" else submissions / self.base


def read_chaff(chaff_dir: Path) -> Chaff:
    """Read and check `chaff_dir/chaff.yaml` (its shape only; `materialize` checks the edits apply)."""
    chaff_dir = Path(chaff_dir)
    source = chaff_dir / "chaff.yaml"
    try:
        data = read_yaml(source)
    except YamlError as exc:  # the one YAML reader that names the file and the line
        raise ChaffError(str(exc)) from None
    if not isinstance(data, dict):
        raise ChaffError(f"{source}: must be a mapping with {', '.join(sorted(_KEYS))}")
    unknown, missing = sorted(set(map(str, data)) - _KEYS - _OPTIONAL), sorted(_KEYS - set(data))
    if unknown or missing:
        raise ChaffError(
            f"{source}: "
            + "; ".join(
                ([f"unknown key(s) {', '.join(unknown)}"] if unknown else [])
                + ([f"missing key(s) {', '.join(missing)}"] if missing else [])
            )
        )
    base = data["base"]
    if not isinstance(base, str) or not re.fullmatch(r"[A-Za-z0-9_][A-Za-z0-9_.-]*", base) or base == "chaff":
        raise ChaffError(f"{source}: base: must name a folder under submissions/ (got {base!r})")
    defect = data["defect"]
    if not isinstance(defect, str) or not defect.strip() or "\n" in defect.strip():
        raise ChaffError(f"{source}: defect: must be one line saying what is wrong")
    targets = [] if data["targets"] == "all" else data["targets"]
    if not isinstance(targets, list) or (not targets and data["targets"] != "all"):
        raise ChaffError(f"{source}: targets: must be a non-empty list of rubric criterion ids, or `all`")
    for i, target in enumerate(targets):
        if not isinstance(target, str) or not _CRITERION.match(target):
            raise ChaffError(f"{source}: targets[{i}]: {target!r} is not a criterion id such as loadgen.ttft")
    unseen = data.get("unseen", False)
    if not isinstance(unseen, bool):
        raise ChaffError(f"{source}: unseen: must be true or false (got {unseen!r})")
    edits = data["edits"]
    if not isinstance(edits, list) or (not edits and base != "starter"):
        raise ChaffError(
            f"{source}: edits: must be a non-empty list of {{file, find, replace}} (only the starter "
            "is a chaff as it is)"
        )
    return Chaff(
        name=chaff_dir.name,
        defect=defect.strip(),
        targets=tuple(targets),
        path=chaff_dir,
        base=base,
        edits=tuple(_edit(raw, f"{source}: edits[{i}]") for i, raw in enumerate(edits)),
        unseen=unseen,
    )


def _edit(raw: Any, where: str) -> Edit:
    if not isinstance(raw, dict) or set(map(str, raw)) != _EDIT_KEYS:
        keys = sorted(map(str, raw)) if isinstance(raw, dict) else type(raw).__name__
        raise ChaffError(f"{where}: must have exactly the keys file, find, replace (got {keys})")
    file, find, replace = raw["file"], raw["find"], raw["replace"]
    if not isinstance(file, str) or not file:
        raise ChaffError(f"{where}: file: must be a path relative to the submission")
    posix = PurePosixPath(file)
    if posix.is_absolute() or ".." in posix.parts or "\\" in file:
        raise ChaffError(f"{where}: file: {file!r} must stay inside the submission (relative, no '..')")
    if not isinstance(find, str) or not find:
        raise ChaffError(f"{where} ({file}): find: must be non-empty text")
    if not isinstance(replace, str):
        raise ChaffError(f"{where} ({file}): replace: must be text (use '' to delete)")
    return Edit(file=posix.as_posix(), find=find, replace=replace)


def list_chaff(root: Path) -> list[Chaff]:
    """Every chaff under `root` (e.g. submissions/chaff), by name; a broken one raises ChaffError."""
    root = Path(root)
    if not root.is_dir():
        raise ChaffError(f"{root}: no such folder of chaff")
    return [read_chaff(folder) for folder in sorted(root.iterdir()) if (folder / "chaff.yaml").is_file()]


def materialize(chaff_dir: Path, dest: Path) -> Path:
    """Build the chaff as a submission in the folder `dest` (a copy of its base with its edits
    applied) and return `dest`. `dest` must not exist yet, or be an empty folder; on any error
    what was written there is removed again."""
    chaff = read_chaff(chaff_dir)
    base = chaff.base_path
    if not (base / "submission.yaml").is_file():
        raise ChaffError(f"{chaff.path / 'chaff.yaml'}: base: {base} is not a submission (no submission.yaml)")
    target = Path(dest)
    existed = target.is_dir()
    if target.exists() and not (existed and not any(target.iterdir())):
        raise ChaffError(f"{target}: already exists and is not an empty folder; materialize into a fresh one")
    shutil.copytree(base, target, ignore=_NOT_COPIED, dirs_exist_ok=existed)
    try:
        for i, edit in enumerate(chaff.edits):
            _apply(chaff, i, edit, target)
    except BaseException:
        shutil.rmtree(target, ignore_errors=True)
        if existed:
            target.mkdir()
        raise
    return target


def edited(text: str, edit: Edit, where: str) -> str:
    """`text` with the edit's one `find` replaced; ChaffError, saying `where`, when it does not occur exactly once."""
    count = text.count(edit.find)
    if count != 1:
        first = edit.find.strip().splitlines()[0][:60] if edit.find.strip() else repr(edit.find)
        raise ChaffError(f"{where}: `find` occurs {count} times, must occur exactly once (it begins {first!r})")
    return text.replace(edit.find, edit.replace)


def _apply(chaff: Chaff, index: int, edit: Edit, target: Path) -> None:
    where = f"chaff {chaff.name}: edits[{index}] ({edit.file})"
    path = target / edit.file
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise ChaffError(f"{where}: no such file in base {chaff.base}") from None
    path.write_text(edited(text, edit, where), encoding="utf-8")
