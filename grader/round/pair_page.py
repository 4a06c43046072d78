"""A flagged pair of submissions side by side, the text they share highlighted: `similarity/<a>--<b>.html`.

One page per pair, one section per deliverable flagged (its score and each side's share), each side's
files with the matched regions marked. The regions are copydetect's copied slices of the filtered
text, mapped back onto the files as written (matched_regions, below), so a region
may begin or end inside a name or a string. Self-contained: no script, no URL.
"""

from __future__ import annotations

import html
import re

import numpy as np

from grader.reports.page_style import CSS
from grader.reports.text import clean
from grader.round.similarity import Fingerprint, Region, Similarity, SimilarPair

__all__ = ["FOLDER", "matched_regions", "page_name", "pair_page"]

FOLDER = "similarity"
_UNSAFE_NAME = re.compile(r"[^A-Za-z0-9._-]+")
_PAGE_CSS = """
.sides { display: grid; grid-template-columns: 1fr 1fr; gap: 12px; }
.side h3 { text-transform: none; letter-spacing: 0; }
.side pre { max-height: 560px; overflow: auto; white-space: pre; font-size: 12px; line-height: 1.35; }
mark { background: #ffd7a8; color: inherit; }
main, header { max-width: 1500px; }
.files-unmatched { color: var(--muted); font-size: 13px; }
"""


def _slices_to_regions(doc: Fingerprint, slices: np.ndarray) -> list[Region]:
    """copydetect's slices of filtered text as regions of the files' own text."""
    names = list(doc.files)
    regions: list[Region] = []
    for start, end in zip(slices[0].tolist(), slices[1].tolist(), strict=True):
        end = min(end, len(doc.raw_at))
        if end <= start:
            continue
        first, last = doc.raw_at[start], doc.raw_at[end - 1]
        if first[0] == last[0]:
            regions.append(_region(doc, names, int(first[0]), int(first[1]), int(last[1])))
            continue
        for index in range(int(first[0]), int(last[0]) + 1):  # a slice across files: one region per file
            text = doc.files[names[index]]
            lo = int(first[1]) if index == first[0] else 0
            hi = int(last[1]) if index == last[0] else len(text) - 1
            regions.append(_region(doc, names, index, lo, hi))
    return regions


def _region(doc: Fingerprint, names: list[str], index: int, lo: int, hi: int) -> Region:
    """A region that ends at the end of its last token, so a highlighted name is whole."""
    text = doc.files[names[index]]
    end = hi + 1
    while (
        end < len(text)
        and (text[end].isalnum() or text[end] == "_")
        and (text[end - 1].isalnum() or text[end - 1] == "_")
    ):
        end += 1
    return Region(names[index], lo, end)


def matched_regions(a: Fingerprint, b: Fingerprint) -> tuple[list[Region], list[Region]]:
    """Where two documents match, in each one's files: copydetect's copied slices, mapped back.

    The overlap is what copydetect's `find_fingerprint_overlap` returns (every position of every hash
    both hold), found with one array lookup instead of its loop over the shared hashes (25 ms a
    deliverable pair on the reference's load generator, against under one)."""
    from copydetect.utils import get_copied_slices

    overlap_a = a.positions[np.isin(a.hashes, b.hashes)]
    overlap_b = b.positions[np.isin(b.hashes, a.hashes)]
    return (
        _slices_to_regions(a, get_copied_slices(overlap_a, a.k)),
        _slices_to_regions(b, get_copied_slices(overlap_b, b.k)),
    )


def page_name(a: str, b: str) -> str:
    """The page's file name, under FOLDER: safe for any submission or leak name."""
    return f"{_UNSAFE_NAME.sub('-', a)}--{_UNSAFE_NAME.sub('-', b)}.html"


def _e(value: object) -> str:
    return html.escape(clean(value), quote=True)


def _marked(text: str, regions: list[Region]) -> str:
    out: list[str] = []
    at = 0
    for r in sorted(regions, key=lambda r: r.start):
        start, end = max(r.start, at), min(r.end, len(text))
        if end <= start:
            continue
        out.append(html.escape(text[at:start]))
        out.append(f"<mark>{html.escape(text[start:end])}</mark>")
        at = end
    out.append(html.escape(text[at:]))
    return "".join(out)


def _side(doc: Fingerprint, regions: list[Region], share: float, title: str) -> str:
    by_file: dict[str, list[Region]] = {}
    for r in regions:
        by_file.setdefault(r.file, []).append(r)
    shown = [f for f in doc.files if f in by_file]
    unmatched = [f for f in doc.files if f not in by_file]
    parts = [f"<div class=side><h3>{_e(title)}: {share:.0%} of its own text found on the other side</h3>"]
    for path in shown:
        parts.append(f"<p class=mono>{_e(path)}</p><pre>{_marked(doc.files[path], by_file[path])}</pre>")
    if unmatched:
        parts.append(f"<p class=files-unmatched>No match in: {_e(', '.join(unmatched))}</p>")
    parts.append("</div>")
    return "".join(parts)


def pair_page(pairs: list[SimilarPair], similarity: Similarity) -> str:
    """The page of one pair of submissions (every SimilarPair given must have the same a and b)."""
    a, b = pairs[0].a, pairs[0].b
    sections = []
    for pair in pairs:
        doc_a = similarity.documents[(pair.a, pair.deliverable)]
        doc_b = similarity.documents[(pair.b, pair.deliverable)]
        regions_a, regions_b = matched_regions(doc_a, doc_b)
        also = f" (the same text as {', '.join(doc_b.also)})" if doc_b.also else ""
        sections.append(
            f"<section><h2>{_e(pair.deliverable)}: {pair.score:.0%}</h2>"
            f"<p>{_e(a)} shares {pair.share_a:.0%} of its {_e(pair.deliverable)} with {_e(b)}{_e(also)}; "
            f"{_e(b)} shares {pair.share_b:.0%} of its own. Highlighted: the text both hold (after names, "
            "strings, comments and layout are set aside for code), less the starter's.</p>"
            f"<div class=sides>{_side(doc_a, regions_a, pair.share_a, a)}{_side(doc_b, regions_b, pair.share_b, b)}"
            "</div></section>"
        )
    return (
        "<!DOCTYPE html>\n<html lang=en><head><meta charset=utf-8>"
        "<meta name=viewport content='width=device-width, initial-scale=1'>"
        f"<title>Similarity: {_e(a)} and {_e(b)}</title><style>{CSS}{_PAGE_CSS}</style></head><body>"
        f'<header><h1>{_e(a)} and {_e(b)}</h1><p><a href="../index.html">Back to the round</a>. '
        f"Flagged at {similarity.threshold:.0%} and above.</p></header>"
        f"<main>{''.join(sections)}</main></body></html>\n"
    )
