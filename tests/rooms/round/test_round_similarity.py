"""The round's similarity check (grader/round/similarity.py): disguised copies found, honest work and
the starter's skeleton not, copydetect's own measure kept, the same figures in every process."""

from __future__ import annotations

import io
import json
import subprocess
import sys
from pathlib import Path

import pytest
from round_builder import DISGUISES, INDEPENDENT, ROOT, STARTER, disguise, suffixed

from grader.round.pair_page import matched_regions
from grader.round.similarity import DEFAULT_THRESHOLD, Fingerprinter, compare
from grader.round.sources import Deliverable, Sources, snapshot

REFERENCE = ROOT / "submissions" / "reference"


def _sizing_of(folder: Path) -> Sources:
    """Only the sizing code: three files, so the test tokenises little."""
    files = {p.relative_to(folder).as_posix(): p.read_text() for p in sorted((folder / "sizing").glob("*.py"))}
    return Sources("", {"sizing": Deliverable("sizing/", files)})


@pytest.fixture(scope="module")
def copies(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Sources]:
    """The reference's sizing code under every disguise, and the starter's skeleton."""
    found = {}
    for name, steps in DISGUISES.items():
        folder = tmp_path_factory.mktemp(name)
        (folder / "sizing").mkdir()
        for path in (REFERENCE / "sizing").glob("*.py"):
            (folder / "sizing" / path.name).write_text(path.read_text())
        disguise(folder, steps, folders=("sizing",))
        found[name] = _sizing_of(folder)
    found["skeleton"] = _sizing_of(STARTER)
    return found


def test_every_disguised_copy_is_flagged_against_the_reference_and_the_skeleton_is_not(
    copies: dict[str, Sources],
) -> None:
    result = compare(copies, {"reference": _sizing_of(REFERENCE)})
    best = {p.a: p for p in result.pairs if p.leak}
    for name in DISGUISES:
        assert best[name].b == "reference" and best[name].score >= DEFAULT_THRESHOLD, (name, best[name])
    assert result.unscored == {"skeleton": ["sizing"]}  # nothing of its own once the starter is set aside
    assert all("skeleton" not in (p.a, p.b) for p in result.pairs)


def test_the_independent_load_generator_is_not_flagged_against_the_reference_and_its_renamed_copy_is(
    tmp_path: Path,
) -> None:
    copy = tmp_path / "copy"
    copy.mkdir()
    (copy / "loadgen.py").write_text((INDEPENDENT / "loadgen.py").read_text())
    disguise(copy, ("rename",), rename_with=suffixed, folders=())
    only_loadgen = {
        "independent": snapshot(INDEPENDENT),
        "copy": Sources("", {"loadgen": Deliverable("loadgen.py", {"loadgen.py": (copy / "loadgen.py").read_text()})}),
    }
    reference = snapshot(REFERENCE)
    leak = Sources("", {"loadgen": reference.deliverables["loadgen"]})
    result = compare(only_loadgen, {"reference": leak})
    by = {(p.a, p.b, p.deliverable): p for p in result.pairs}
    assert by[("copy", "independent", "loadgen")].score >= DEFAULT_THRESHOLD
    assert by[("independent", "reference", "loadgen")].score < DEFAULT_THRESHOLD / 2


def test_shares_are_copydetects_compare_files(copies: dict[str, Sources]) -> None:
    """One file, no boilerplate: the vectorised shares equal copydetect's compare_files with a window of 1."""
    from copydetect import CodeFingerprint, compare_files

    ours = copies["reimplemented"].deliverables["sizing"].files["sizing/arithmetic.py"]
    theirs = (REFERENCE / "sizing" / "arithmetic.py").read_text()
    prints = Fingerprinter(None)
    a = prints.document("a", "sizing", {"arithmetic.py": ours})
    b = prints.document("b", "sizing", {"arithmetic.py": theirs})
    result = compare(
        {"a": Sources("", {"sizing": Deliverable("", {"arithmetic.py": ours})})},
        {"b": Sources("", {"sizing": Deliverable("", {"arithmetic.py": theirs})})},
        starter=Path("/nonexistent"),
    )
    fa = CodeFingerprint("a.py", 25, 1, fp=io.StringIO(ours))
    fb = CodeFingerprint("b.py", 25, 1, fp=io.StringIO(theirs))
    _, (sim_a, sim_b), _ = compare_files(fa, fb)
    (pair,) = [p for p in result.pairs if p.deliverable == "sizing"]
    assert (pair.share_a, pair.share_b) == pytest.approx((sim_a, sim_b), abs=1e-12)
    assert 0.3 < pair.share_a < 1.0  # one function written anew
    regions_a, regions_b = matched_regions(a, b)
    assert regions_a and regions_b
    assert all(ours[r.start : r.end].strip() for r in regions_a)


_IN_ANOTHER_PROCESS = """
import json, sys
from pathlib import Path
from grader.round.sources import snapshot, Sources
from grader.round.similarity import compare
ref = snapshot(Path(sys.argv[1]))
ind = snapshot(Path(sys.argv[2]))
keep = lambda s: Sources("", {"loadgen": s.deliverables["loadgen"]})
result = compare({"independent": keep(ind)}, {"reference": keep(ref)})
print(json.dumps([[p.a, p.b, p.share_a, p.share_b] for p in result.pairs]))
"""


def test_the_same_inputs_give_the_same_figures_whatever_the_hash_seed() -> None:
    """copydetect hashes with Python's salted hash(): with a window of 1 the figures do not depend on it."""

    def run(seed: str) -> list[list[object]]:
        done = subprocess.run(
            [sys.executable, "-c", _IN_ANOTHER_PROCESS, str(REFERENCE), str(INDEPENDENT)],
            capture_output=True,
            text=True,
            check=True,
            cwd=ROOT,
            env={"PYTHONHASHSEED": seed},
            timeout=60,
        )
        figures: list[list[object]] = json.loads(done.stdout)
        return figures

    first = run("1")
    assert first and first == run("2")


def test_the_chaff_in_the_leak_corpus_are_what_building_each_one_gives(tmp_path: Path) -> None:
    """The corpus applies each chaff's edits to its base's texts rather than build 81 folders: the same
    sources, chaff by chaff, as a snapshot of the chaff built on disk."""
    from grader.kit.chaff import list_chaff, materialize
    from grader.round.leaks import leak_corpus

    leaks, said = leak_corpus()
    chaff = list_chaff(ROOT / "submissions" / "chaff")
    assert f"its {len(chaff)} chaff" in said
    for c in chaff:
        built = snapshot(materialize(c.path, tmp_path / c.name))
        assert leaks[f"chaff/{c.name}"].to_dict() == built.to_dict(), c.name


def test_a_file_tokenised_once_is_read_back_from_the_cache_as_it_was_made(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from grader.round import token_cache

    monkeypatch.setenv("GRADER_CACHE_DIR", str(tmp_path / "cache"))
    text = (INDEPENDENT / "loadgen.py").read_text()
    fresh = Fingerprinter(None)._filter("loadgen.py", text)
    kept = list((tmp_path / "cache").rglob("*.json"))
    assert len(kept) == 1  # made once, kept
    read = token_cache.load(".py", text)
    assert read is not None and read[0] == fresh[0] and read[1].tolist() == fresh[1].tolist()
    kept[0].write_text("{not json")  # a damaged entry is made again, never trusted
    assert Fingerprinter(None)._filter("loadgen.py", text)[0] == fresh[0]
    monkeypatch.setenv("GRADER_CACHE_DIR", "")  # empty: keep nothing
    assert token_cache.cache_dir() is None and token_cache.load(".py", text) is None
