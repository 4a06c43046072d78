"""Plots as static, inline SVG drawn by pygal.

The page must work offline and as a forwarded file, and the same Grade must give the same bytes.
pygal by default links a tooltip script from the web, embeds an inline config script, stamps
today's date and its home page into comments, and names each chart with a random uuid. Here the
linked script is turned off (`js=[]`), an XML filter drops every comment and <script>, and the
chart id is given by the caller, so the SVG is static and reproducible.

Series longer than `MAX_POINTS` are thinned to evenly spaced points (first and last kept) so the
page stays small; the caption says so.
"""

from __future__ import annotations

import math
import re
import xml.etree.ElementTree as ET
from collections.abc import Callable

import pygal
from pygal.style import Style

from grader.outcome import Plot
from grader.reports.text import clean

__all__ = ["CHART_STYLE", "MAX_POINTS", "plot_svg", "static_svg", "thin"]

MAX_POINTS = 300

CHART_STYLE = Style(
    background="#ffffff",
    plot_background="#ffffff",
    foreground="#222222",
    foreground_strong="#222222",
    foreground_subtle="#666666",
    colors=("#1f6fb2", "#d9822b", "#2e8540", "#8e44ad", "#c0392b", "#7f8c8d"),
    font_family="system-ui, -apple-system, 'Segoe UI', Roboto, Helvetica, Arial, sans-serif",
    title_font_size=15,
    label_font_size=11,
    major_label_font_size=11,
    legend_font_size=12,
)


def thin(points: list[tuple[float, float]], limit: int = MAX_POINTS) -> list[tuple[float, float]]:
    """At most `limit` points, evenly spaced by index, keeping the first and the last."""
    if len(points) <= limit:
        return list(points)
    step = (len(points) - 1) / (limit - 1)
    return [points[round(i * step)] for i in range(limit)]


def _finite(points: list[tuple[float, float]]) -> list[tuple[float, float]]:
    return [(float(x), float(y)) for x, y in points if math.isfinite(float(x)) and math.isfinite(float(y))]


def _step(points: list[tuple[float, float]]) -> list[tuple[float, float]]:
    """A value that holds until the next sample: a corner before every change."""
    out: list[tuple[float, float]] = []
    for x, y in sorted(points):
        if out:
            out.append((x, out[-1][1]))
        out.append((x, y))
    return out


_LONG_DECIMAL = re.compile(r"(-?\d+\.\d{2})\d+")
_GEOMETRY = ("cx", "cy", "x", "y", "x1", "y1", "x2", "y2", "width", "height", "d", "points", "transform")


def static_svg(chart_id: str) -> Callable[[ET.Element], ET.Element]:
    """An XML filter: no comments, no scripts, so nothing runs and nothing changes by the day.

    It also drops the tooltip data (<desc> nodes only the dropped script reads) and cuts
    coordinates to 1/100 px, which together halve a scatter plot's size.
    """

    def strip(root: ET.Element) -> ET.Element:
        for parent in list(root.iter()):
            for child in list(parent):
                raw: object = child.tag  # a comment's tag is the ET.Comment function, not a string
                tag = str(raw).split("}")[-1]
                if raw is ET.Comment or tag == "script" or (tag == "desc" and parent is not root):
                    parent.remove(child)
            for key in _GEOMETRY:
                if key in parent.attrib:
                    parent.set(key, _LONG_DECIMAL.sub(r"\1", parent.attrib[key]))
        root.set("role", "img")
        root.set("aria-label", root.findtext("title") or chart_id)
        return root

    return strip


def _short(value: float | None) -> str:
    return "" if value is None else f"{value:.4g}"


def _config(plot: Plot) -> dict[str, object]:
    return {
        "js": [],
        "disable_xml_declaration": True,
        "style": CHART_STYLE,
        "width": 560,
        "height": 320,
        "explicit_size": False,
        "title": clean(plot.title),
        "x_title": clean(plot.x_label),
        "y_title": clean(plot.y_label),
        "legend_at_bottom": True,
        "truncate_legend": 40,
        "show_x_guides": False,
        "print_values": False,
        "tooltip_fancy_mode": False,
        "no_data_text": "no data",
        # Axis labels: short numbers, never cut to "0.…", at most about 8 ticks an axis.
        "truncate_label": -1,
        "max_scale": 8,
        "x_value_formatter": _short,
        "value_formatter": _short,
    }


def plot_svg(plot: Plot, chart_id: str) -> tuple[str, int]:
    """(inline SVG text, number of points dropped by thinning) for one plot.

    `chart_id` must be unique on the page: pygal scopes the chart's CSS by it.
    """
    dropped = 0
    series: list[tuple[str, list[tuple[float, float]]]] = []
    for name, raw in plot.series.items():
        points = _finite(list(raw))
        kept = thin(points)
        dropped += len(points) - len(kept)
        series.append((clean(name), kept))

    if plot.kind == "bar":
        labels = sorted({x for _, pts in series for x, _ in pts})
        chart = pygal.Bar(**_config(plot))
        chart.x_labels = [f"{x:g}" for x in labels]
        for name, pts in series:
            heights = dict(pts)
            chart.add(name, [heights.get(x) for x in labels])
    else:
        chart = pygal.XY(**_config(plot), stroke=plot.kind == "step", show_dots=plot.kind == "scatter", dots_size=2.5)
        for name, pts in series:
            chart.add(name, _step(pts) if plot.kind == "step" else sorted(pts))
        if plot.kind == "scatter" and plot.diagonal:
            values = [v for _, pts in series for p in pts for v in p]
            if values:
                lo, hi = min(values), max(values)
                chart.add(
                    "y = x",
                    [(lo, lo), (hi, hi)],
                    stroke=True,
                    show_dots=False,
                    stroke_style={"dasharray": "6, 4", "width": 1},
                )
    chart.uuid = chart_id
    chart.add_xml_filter(static_svg(chart_id))
    return chart.render(is_unicode=True), dropped
