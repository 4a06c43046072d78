"""What a round is compared with besides itself: the kit's reference and chaff, and solutions that leaked.

    from grader.round.leaks import leak_corpus
    leaks, note = leak_corpus([Path("leaked/")])   # {"reference": ..., "chaff/NAME": ..., "leak/NAME": ...}

Each is a submission's sources (grader.round.sources), scored against every submission by
grader.round.similarity like any other; the sentence says what was at hand, for the round's page.
"""

from __future__ import annotations

import tempfile
from collections.abc import Iterator, Sequence
from pathlib import Path

from grader.kit.chaff import Chaff, ChaffError, edited, list_chaff, materialize
from grader.round.similarity import SimilarityError
from grader.round.sources import Deliverable, Sources, snapshot
from grader.shared.kit_files import submissions_dir

__all__ = ["leak_corpus"]


def _leak_folders(paths: Sequence[Path]) -> Iterator[tuple[str, Path]]:
    for path in paths:
        path = Path(path)
        if not path.exists():
            raise SimilarityError(f"--leak {path}: no such file or folder")
        if path.is_dir() and not (path / "submission.yaml").is_file():
            inner = [
                p
                for p in sorted(path.iterdir())
                if not p.name.startswith(".")
                and ((p / "submission.yaml").is_file() or p.name.endswith((".zip", ".tar.gz", ".tgz", ".tar")))
            ]
            if not inner:
                raise SimilarityError(
                    f"--leak {path}: holds no submission (a folder with submission.yaml, or an archive), nor is one"
                )
            for p in inner:
                yield p.name.split(".")[0], p
        else:
            yield path.name.split(".")[0], path


def leak_corpus(paths: Sequence[Path] = (), *, kit: bool = True) -> tuple[dict[str, Sources], str]:
    """What the round is compared with besides itself, and a sentence saying so.

    With `kit`, the kit's reference and every chaff when this is a checkout (an installed kit has
    neither); `paths` adds submissions that leaked from elsewhere (folders, archives, or folders of them)."""
    leaks: dict[str, Sources] = {}
    said: list[str] = []
    if kit:
        reference = submissions_dir() / "reference"
        if (reference / "submission.yaml").is_file():
            leaks["reference"] = snapshot(reference)
            leaks.update(_chaff(submissions_dir() / "chaff"))
            said.append(f"the kit's reference and its {len(leaks) - 1} chaff")
    for name, path in _leak_folders(paths):
        try:
            leaks[f"leak/{name}"] = snapshot(path)
        except (OSError, ValueError) as exc:
            raise SimilarityError(f"--leak {path}: cannot be read ({exc})") from None
    if paths:
        said.append(f"{len(list(_leak_folders(paths)))} submission(s) named by --leak")
    if said:
        return leaks, "Each submission was compared with every other and with " + " and ".join(said) + "."
    return leaks, (
        "Each submission was compared with every other only: no reference is at hand (an installed kit "
        "has none); name a leaked solution with --leak to compare with it too."
    )


def _chaff(folder: Path) -> dict[str, Sources]:
    """Every chaff's sources: its base's snapshot with its edits applied to the texts (a `find` that does not
    occur once is the same ChaffError as building it), or the snapshot of the chaff built on disk."""
    if not folder.is_dir():
        return {}
    found: dict[str, Sources] = {}
    bases: dict[Path, Sources] = {}
    with tempfile.TemporaryDirectory(prefix="grader-chaff-") as scratch:
        try:
            for chaff in list_chaff(folder):
                base = bases.setdefault(chaff.base_path, snapshot(chaff.base_path))
                sources = _with_edits(base, chaff)
                found[f"chaff/{chaff.name}"] = (
                    sources if sources is not None else snapshot(materialize(chaff.path, Path(scratch) / chaff.name))
                )
        except ChaffError as exc:
            raise SimilarityError(str(exc)) from None
    return found


def _with_edits(base: Sources, chaff: Chaff) -> Sources | None:
    """`base` with the chaff's edits applied to the texts of its files (grader.kit.chaff.edited); None when
    an edit is to a file the snapshot does not hold (submission.yaml, say): then it is built on disk."""
    deliverables = {name: Deliverable(d.root, dict(d.files)) for name, d in base.deliverables.items()}
    for i, edit in enumerate(chaff.edits):
        holder = next((d for d in deliverables.values() if edit.file in d.files), None)
        if holder is None:
            return None
        holder.files[edit.file] = edited(holder.files[edit.file], edit, f"chaff {chaff.name}: edits[{i}] ({edit.file})")
    return Sources(base.candidate, deliverables, list(base.notes))
