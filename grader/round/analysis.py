"""What a round's summary shows besides the ranking: similarity, item analysis, score distributions.

    from grader.round.analysis import analyse
    analysis = analyse(Path("grades"), rows, threshold=0.5)

Everything is read from the report folders (report.json, and sources.json.gz for the similarity),
so a round graded on one machine, merged from a Kubernetes Job's pods or re-judged gives the same
analysis.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path

from grader.round.items import Item, ScoredRow, deliverable_scores, item_analysis
from grader.round.leaks import leak_corpus
from grader.round.similarity import DEFAULT_THRESHOLD, Similarity, SimilarPair, compare
from grader.round.sources import Sources, SourcesError, read_sources

__all__ = ["Analysis", "analyse"]


@dataclass
class Analysis:
    items: list[Item]
    distributions: dict[str, list[tuple[str, float, float]]]  # deliverable -> (name, points, maximum)
    similarity: Similarity | None = None
    notes: list[str] = field(default_factory=list)  # what the reader must know (no sources for X, ...)

    def renamed(self, codes: Mapping[str, str]) -> Analysis:
        """The same analysis with every submission named by its code (leaks keep their names)."""

        def code(name: str) -> str:
            return codes.get(name, name)

        similarity = None
        if self.similarity is not None:
            s = self.similarity
            similarity = Similarity(
                threshold=s.threshold,
                note=s.note,
                pairs=[replace(p, a=code(p.a), b=code(p.b)) for p in s.pairs],
                unscored={code(k): v for k, v in s.unscored.items()},
                documents={(code(o), d): replace(doc, owner=code(doc.owner)) for (o, d), doc in s.documents.items()},
            )
        return Analysis(
            items=self.items,
            similarity=similarity,
            notes=list(self.notes),
            distributions={d: [(code(n), p, m) for n, p, m in v] for d, v in self.distributions.items()},
        )


def _sources(out: Path, names: Sequence[str]) -> tuple[dict[str, Sources], list[str]]:
    found: dict[str, Sources] = {}
    missing: list[str] = []
    for name in names:
        try:
            sources = read_sources(out / name)
        except SourcesError:
            sources = None
        if sources is None:
            missing.append(name)
        else:
            found[name] = sources
    return found, missing


def analyse(
    out: Path,
    rows: Sequence[ScoredRow],
    *,
    threshold: float | None = DEFAULT_THRESHOLD,
    leaks: Sequence[Path] = (),
    kit_leaks: bool = True,
    against: Sequence[Path] = (),
    jobs: int = 1,
) -> Analysis:
    """Item analysis of `rows`, and (unless `threshold` is None) the similarity of their report folders' sources."""
    analysis = Analysis(items=item_analysis(rows), distributions=deliverable_scores(rows))
    if threshold is None:
        return analysis
    try:
        import copydetect  # noqa: F401 - the fingerprints' library, an extra of the kit
    except ImportError:
        analysis.notes.append(
            "No similarity check: it needs copydetect, the kit's `round` extra (pip install "
            "'serving-takehome-kit[round]', as `make` does); --no-similarity leaves it out."
        )
        return analysis
    sources, missing = _sources(out, [row.name for row in rows])
    if missing:
        analysis.notes.append(
            f"No sources kept for {', '.join(missing)} (graded before the round kept them): left "
            "out of the similarity check; grade them again with --force to include them."
        )
    corpus, note = leak_corpus(leaks, kit=kit_leaks, against=against)
    analysis.similarity = compare(sources, corpus, threshold=threshold, note=note, jobs=jobs)
    return analysis


def closest(similarity: Similarity | None, name: str) -> SimilarPair | None:
    return similarity.highest(name) if similarity is not None else None
