"""What a round is compared with besides itself: the kit's reference and chaff, solutions that leaked, and the
submissions of earlier rounds.

    from grader.round.leaks import leak_corpus
    leaks, note = leak_corpus([Path("leaked/")])   # {"reference": ..., "chaff/NAME": ..., "leak/NAME": ...}
    leaks, note = leak_corpus(against=[Path("grades-2026-q3")])   # {"past/grades-2026-q3/alice": ...}

An earlier round is its `--out` folder: each report folder keeps its submission's sources beside its grade
(grader/round/sources.py), so a round graded months ago can be compared with today's without its submissions.
A past candidate is named as that round named them: by name, or by their code when it was graded blind (its
codes file, `.blind-codes.json`, beside the named grades).

Each is a submission's sources (grader.round.sources), scored against every submission by
grader.round.similarity like any other; the sentence says what was at hand, for the round's page.
"""

from __future__ import annotations

import json
import tempfile
from collections.abc import Iterator, Sequence
from pathlib import Path

from grader.kit.chaff import Chaff, ChaffError, edited, list_chaff, materialize
from grader.round.similarity import SimilarityError
from grader.round.sources import SOURCES_NAME, Deliverable, Sources, SourcesError, read_sources, snapshot
from grader.shared.kit_files import submissions_dir

__all__ = ["CODES", "leak_corpus", "past_round"]

#: A blind round's codes, by report folder name, beside its named grades (grader/round/blind.py writes it).
CODES = ".blind-codes.json"


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


def past_round(folder: Path) -> dict[str, Sources]:
    """The kept sources of an earlier round's every submission, by `past/ROUND/NAME` (or its code, graded blind)."""
    folder = Path(folder)
    if not folder.is_dir():
        raise SimilarityError(f"--against {folder}: no such folder (an earlier round's --out)")
    codes_file = folder / CODES
    try:
        codes = json.loads(codes_file.read_text(encoding="utf-8")) if codes_file.is_file() else {}
    except (OSError, ValueError) as exc:
        raise SimilarityError(f"--against {codes_file}: cannot be read ({exc})") from None
    found: dict[str, Sources] = {}
    for report in sorted(p for p in folder.iterdir() if p.is_dir() and (p / SOURCES_NAME).is_file()):
        try:
            sources = read_sources(report)
        except SourcesError as exc:
            raise SimilarityError(f"--against {report}: {exc}") from None
        if sources is not None:
            found[f"past/{folder.name}/{codes.get(report.name, report.name)}"] = sources
    if not found:
        raise SimilarityError(
            f"--against {folder}: no report folder there keeps its sources ({SOURCES_NAME}); give a round's --out "
            "folder graded by this kit"
        )
    return found


def leak_corpus(
    paths: Sequence[Path] = (), *, kit: bool = True, against: Sequence[Path] = ()
) -> tuple[dict[str, Sources], str]:
    """What the round is compared with besides itself, and a sentence saying so.

    With `kit`, the kit's reference and every chaff when this is a checkout (an installed kit has
    neither); `paths` adds submissions that leaked from elsewhere (folders, archives, or folders of them);
    `against` every submission of these earlier rounds (their --out folders)."""
    leaks: dict[str, Sources] = {}
    said: list[str] = []
    for folder in against:
        past = past_round(folder)
        leaks.update(past)
        said.append(f"the {len(past)} submission(s) of the earlier round {Path(folder).name}")
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
