"""The round summary's analysis sections and their CSV files: similarity, item analysis, score distributions.

    from grader.round.analysis_page import analysis_html, analysis_files
    html = analysis_html(analysis)                 # sections for index.html
    files = analysis_files(analysis)               # {"items.csv": ..., "similarity/<a>--<b>.html": ...}

Every figure on the page is in a CSV beside it: `items.csv` (one row per criterion), `deliverables.csv`
(each candidate's points per deliverable, what the distribution plots count) and `similarity.csv`
(every pair scored).
"""

from __future__ import annotations

import csv
import html
import io
from collections.abc import Iterable

import pygal

from grader.reports.plots import CHART_STYLE, static_svg
from grader.reports.text import clean
from grader.round.analysis import Analysis
from grader.round.items import Item
from grader.round.pair_page import FOLDER, page_name, pair_page
from grader.round.similarity import Similarity, SimilarPair

__all__ = ["DELIVERABLES_CSV", "ITEMS_CSV", "SIMILARITY_CSV", "analysis_files", "analysis_html", "pair_pages"]

ITEMS_CSV = "items.csv"
DELIVERABLES_CSV = "deliverables.csv"
SIMILARITY_CSV = "similarity.csv"
_BINS = 10  # the distribution plots' bars: 0-10 %, ..., 90-100 %


def _e(value: object) -> str:
    return html.escape(clean(value), quote=True)


def _csv(header: list[str], rows: Iterable[list[object]]) -> str:
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerow(header)
    writer.writerows(rows)
    return buffer.getvalue()


def _num(value: float | None, digits: int = 4) -> str:
    return "" if value is None else f"{round(value, digits):g}"


def items_csv(items: list[Item]) -> str:
    return _csv(
        ["criterion", "deliverable", "weight", "graded", "pass_rate", "mean_score", "discrimination", "flags"],
        (
            [
                i.criterion,
                i.deliverable,
                _num(i.weight),
                i.graded,
                _num(i.pass_rate),
                _num(i.mean_score),
                _num(i.discrimination),
                "; ".join(i.flags),
            ]
            for i in items
        ),
    )


def deliverables_csv(distributions: dict[str, list[tuple[str, float, float]]]) -> str:
    return _csv(
        ["deliverable", "name", "points", "max_points", "percent"],
        (
            [d, name, _num(got), _num(most), _num(100 * got / most if most else 0.0, 1)]
            for d in sorted(distributions)
            for name, got, most in sorted(distributions[d])
        ),
    )


def similarity_csv(similarity: Similarity) -> str:
    return _csv(
        ["a", "b", "deliverable", "score", "share_a", "share_b", "leak", "flagged"],
        (
            [
                p.a,
                p.b,
                p.deliverable,
                _num(p.score),
                _num(p.share_a),
                _num(p.share_b),
                "yes" if p.leak else "",
                "yes" if p.score >= similarity.threshold else "",
            ]
            for p in similarity.pairs
        ),
    )


def by_pair(pairs: list[SimilarPair]) -> dict[tuple[str, str], list[SimilarPair]]:
    grouped: dict[tuple[str, str], list[SimilarPair]] = {}
    for p in pairs:
        grouped.setdefault((p.a, p.b), []).append(p)
    return grouped


MAX_PAGES = 300  # side-by-side pages written, highest pairs first; a round of copies would write thousands


def pair_pages(similarity: Similarity) -> dict[str, str]:
    """`similarity/<a>--<b>.html` for every flagged pair (the highest MAX_PAGES)."""
    grouped = list(by_pair(similarity.flagged()).items())[:MAX_PAGES]
    return {f"{FOLDER}/{page_name(a, b)}": pair_page(pairs, similarity) for (a, b), pairs in grouped}


def analysis_files(analysis: Analysis) -> dict[str, str]:
    """The analysis's files, by path relative to the round's folder."""
    files = {ITEMS_CSV: items_csv(analysis.items), DELIVERABLES_CSV: deliverables_csv(analysis.distributions)}
    if analysis.similarity is not None:
        files[SIMILARITY_CSV] = similarity_csv(analysis.similarity)
        files.update(pair_pages(analysis.similarity))
    return files


def _similarity_section(similarity: Similarity) -> str:
    flagged = by_pair(similarity.flagged())
    rows: list[str] = []
    for (a, b), pairs in flagged.items():
        link = f'<a href="{FOLDER}/{_e(page_name(a, b))}">side by side</a>' if len(rows) < MAX_PAGES else ""
        what = ", ".join(f"{p.deliverable} {p.score:.0%}" for p in pairs)
        kind = "leak" if pairs[0].leak else "in the round"
        rows.append(
            f"<tr><td>{_e(a)}</td><td>{_e(b)}</td><td>{_e(kind)}</td><td class=num>{max(p.score for p in pairs):.0%}"
            f"</td><td>{_e(what)}</td><td>{link}</td></tr>"
        )
    unscored = "; ".join(f"{name}: {', '.join(parts)}" for name, parts in sorted(similarity.unscored.items()))
    table = (
        "<table><tr><th>Submission</th><th>Matches</th><th>Where</th><th class=num>Highest</th>"
        f"<th>Deliverables</th><th></th></tr>{''.join(rows)}</table>"
        if rows
        else '<p class="empty">No pair at or above the threshold.</p>'
    )
    return (
        f"<h2>Similarity: {len(flagged)} pairs at or above {similarity.threshold:.0%}</h2>"
        f"<p>{_e(similarity.note)} Compared deliverable by deliverable (load generator, gateway, sizing code, memo), "
        "the starter's text set aside. A score is the larger of the two shares of each side's own text that is "
        "found on the other side. A high score is a reason to read both, not a finding.</p>"
        + table
        + (
            f"<p class=empty>Too little text of their own to compare (the starter's left out): {_e(unscored)}</p>"
            if unscored
            else ""
        )
    )


def _items_section(items: list[Item]) -> str:
    rows = []
    for i in items:
        flags = ", ".join(i.flags)
        rows.append(
            f"<tr><td class=mono>{_e(i.criterion)}</td><td>{_e(i.deliverable)}</td><td class=num>{i.graded}</td>"
            f"<td class=num>{'' if i.pass_rate is None else f'{i.pass_rate:.0%}'}</td>"
            f"<td class=num>{_num(i.mean_score, 2)} / {_num(i.weight, 2)}</td>"
            f"<td class=num>{_num(i.discrimination, 2)}</td><td>{_e(flags)}</td></tr>"
        )
    flagged = sum(1 for i in items if i.flags)
    return (
        f"<h2>Item analysis: {flagged} of {len(items)} criteria flagged</h2>"
        "<p>For each criterion, over the candidates graded on it: the pass rate, the mean points, and the "
        "discrimination (the corrected item-total correlation: the criterion's points against the rest of each "
        "candidate's total). Flagged: everyone passes, everyone fails, or a negative discrimination. Empty when "
        f"it cannot be computed (no spread, or fewer than three graded). The figures are in <code>{ITEMS_CSV}</code>."
        "</p><div class=table-wrap><table><tr><th>Criterion</th><th>Deliverable</th><th class=num>Graded</th>"
        "<th class=num>Pass rate</th><th class=num>Mean / weight</th><th class=num>Discrimination</th>"
        f"<th>Flags</th></tr>{''.join(rows)}</table></div>"
    )


def _distribution_svg(deliverable: str, scores: list[tuple[str, float, float]], index: int) -> str:
    counts = [0] * _BINS
    for _, got, most in scores:
        share = got / most if most else 0.0
        counts[min(_BINS - 1, int(share * _BINS))] += 1
    chart = pygal.Bar(
        js=[],
        disable_xml_declaration=True,
        style=CHART_STYLE,
        width=420,
        height=240,
        explicit_size=False,
        show_legend=False,
        title=clean(f"{deliverable}: {len(scores)} candidates"),
        x_title="share of the deliverable's points",
        y_title="candidates",
        print_values=False,
        truncate_label=-1,
        value_formatter=lambda v: f"{v:g}",
    )
    chart.x_labels = [f"{10 * b}-{10 * (b + 1)}%" for b in range(_BINS)]
    chart.add("candidates", counts)
    chart_id = f"deliverable-{index}"
    chart.uuid = chart_id
    chart.add_xml_filter(static_svg(chart_id))
    return str(chart.render(is_unicode=True))


def _distribution_section(distributions: dict[str, list[tuple[str, float, float]]]) -> str:
    figures = "".join(
        f"<figure>{_distribution_svg(d, distributions[d], i)}</figure>" for i, d in enumerate(sorted(distributions))
    )
    return (
        "<h2>Scores by deliverable</h2><p>How many candidates got what share of each deliverable's points "
        f"(the criteria they were graded on). The figures are in <code>{DELIVERABLES_CSV}</code>.</p>"
        f"<div class=plots>{figures}</div>"
        if distributions
        else ""
    )


def analysis_html(analysis: Analysis) -> str:
    notes = "".join(f"<p class=empty>{_e(n)}</p>" for n in analysis.notes)
    similarity = _similarity_section(analysis.similarity) if analysis.similarity is not None else ""
    return similarity + notes + _items_section(analysis.items) + _distribution_section(analysis.distributions)
