"""report.html: self-contained, escaped, complete; and rendered for real by headless Chromium,
whose DOM must hold every section and plot and whose screenshot must show a page, with a red
banner on top exactly when the grade was not sandboxed."""

from __future__ import annotations

import re
from html.parser import HTMLParser
from pathlib import Path

import pytest
from chromium import needs_chromium, png_pixels, render_with_chromium
from report_samples import EVIL_SCRIPT, sample_grade

from grader.reports import to_html, write_reports
from grader.reports.html import STATUS_LABELS

CRITERIA = ["loadgen.ttft", "loadgen.role-chunk", "loadgen.p90-queue", "gateway.fallback-5xx", "tests.chaff"]
PLOTS = ["plot-1-loadgen-ttft-0", "plot-1-loadgen-ttft-1", "plot-3-loadgen-p90-queue-0"]


class _Outline(HTMLParser):
    """What a reader of the page relies on: element ids, scripts, links, where each <svg> sits."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.ids: list[str] = []
        self.tags: list[str] = []
        self.urls: list[str] = []
        self.svg_in: list[str] = []  # the id of the <figure> around each <svg>
        self.badges: dict[str, str] = {}  # criterion id -> its badge class
        self.hidden_labels: list[str] = []
        self._stack: list[tuple[str, str | None, str | None]] = []
        self._in_tag = False
        self.text: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        a = dict(attrs)
        self.tags.append(tag)
        if element_id := a.get("id"):
            self.ids.append(element_id)
        for key in ("src", "href", "xlink:href", "action", "data"):
            if url := a.get(key):
                self.urls.append(url)
        section = next((i for t, i, _ in reversed(self._stack) if t == "section"), None)
        if tag == "svg":
            self.svg_in.append(next((i for t, i, _ in reversed(self._stack) if t == "figure"), "") or "")
        classes = (a.get("class") or "").split()
        if tag == "span" and "badge" in classes and section in CRITERIA and section not in self.badges:
            self.badges[section] = classes[1]
        if tag == "span" and "tag" in classes:
            self._in_tag = True
            self._tag_section = section
        if tag not in ("meta", "input", "br", "circle", "rect", "path", "line"):
            self._stack.append((tag, a.get("id"), a.get("class")))

    def handle_startendtag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.handle_starttag(tag, attrs)
        if tag not in ("meta", "input", "br", "circle", "rect", "path", "line"):
            self._stack.pop()

    def handle_endtag(self, tag: str) -> None:
        while self._stack:
            if self._stack.pop()[0] == tag:
                break

    def handle_data(self, data: str) -> None:
        self.text.append(data)
        if self._in_tag:
            if data.strip() == "hidden":
                self.hidden_labels.append(self._tag_section or "")
            self._in_tag = False


def _outline(page: str) -> _Outline:
    outline = _Outline()
    outline.feed(page)
    outline.close()
    return outline


def test_page_is_self_contained_and_loads_nothing() -> None:
    page = to_html(sample_grade())
    outline = _outline(page)
    assert "script" not in outline.tags and "link" not in outline.tags and "iframe" not in outline.tags
    assert all(url.startswith("#") for url in outline.urls), outline.urls
    assert set(re.findall(r"https?://[^\s\"'<>]+", page)) == {"http://www.w3.org/2000/svg"}
    assert "url(" not in page and "@import" not in page


def test_page_has_every_section_badge_and_hidden_label() -> None:
    outline = _outline(to_html(sample_grade()))
    for section in ["sandbox", "summary", "scores", "checklist", *CRITERIA, *PLOTS]:
        assert outline.ids.count(section) == 1, section
    assert outline.badges == {
        "loadgen.ttft": "passed",
        "loadgen.role-chunk": "failed",
        "loadgen.p90-queue": "inconclusive",
        "gateway.fallback-5xx": "skipped",
        "tests.chaff": "failed",
    }
    assert len(set(STATUS_LABELS.values())) == 4
    assert sorted(set(outline.hidden_labels)) == ["loadgen.role-chunk", "scores"]
    assert outline.svg_in == PLOTS
    text = " ".join(outline.text)
    for heading in (
        "What the candidate sees",
        "What the grader sent",
        "What the candidate reported",
        "What the ledger shows",
        "Evidence",
        "Plots",
        "For a person to judge",
    ):
        assert heading in text, heading


def test_candidate_text_is_escaped_everywhere() -> None:
    page = to_html(sample_grade())
    assert EVIL_SCRIPT not in page and "<b>Lovelace" not in page
    assert page.count("<details") == page.count("</details>") == 1  # only the logs block
    assert page.count("<pre") == page.count("</pre>")
    assert "\x00" not in page and "\x1b" not in page
    outline = _outline(page)
    text = "".join(outline.text)
    assert EVIL_SCRIPT in text and "Ada <b>Lovelace</b>" in text  # shown as text, not run
    assert text.count("\\x1b[31mred") >= 3  # output, reported, logs


def test_unsandboxed_banner_is_the_first_thing_on_the_page() -> None:
    unsandboxed = to_html(sample_grade(sandboxed=False))
    body = unsandboxed.split("<body>", 1)[1]
    assert body.startswith('<div class="banner unsandboxed" id="sandbox">UNSANDBOXED: ')
    assert "<title>UNSANDBOXED " in unsandboxed
    assert "UNSANDBOXED" not in to_html(sample_grade(sandboxed=True))


def test_checklist_has_fields_for_a_human_score() -> None:
    page = to_html(sample_grade())
    for n in (1, 2):
        assert f'name="human.{n}.score"' in page and f'name="human.{n}.max"' in page


def test_long_evidence_tables_are_cut_with_a_note() -> None:
    page = to_html(sample_grade(many_points=620))
    assert "120 more rows not shown" in page
    assert "Thinned for the page: 320 points not drawn." in page


# --- rendered by Chromium -------------------------------------------------------------------


def _rgb(rows: list[bytes], x: int, y: int, bpp: int) -> tuple[int, int, int]:
    r, g, b = rows[y][x * bpp : x * bpp + 3]
    return r, g, b


@pytest.mark.slow
@needs_chromium
@pytest.mark.parametrize("sandboxed", [False, True])
@pytest.mark.rotating(50)
def test_chromium_renders_every_section_and_a_real_page(tmp_path: Path, sandboxed: bool) -> None:
    page = write_reports(sample_grade(sandboxed=sandboxed), tmp_path / "out")["html"]
    url = page.resolve().as_uri()

    dom = render_with_chromium(tmp_path, "--virtual-time-budget=2000", "--dump-dom", url).stdout
    outline = _outline(dom)
    for section in ["summary", "scores", "checklist", *CRITERIA, *PLOTS]:
        assert section in outline.ids, f"{section} missing from the rendered DOM"
    assert outline.svg_in == PLOTS, "a plot's <svg> did not render inside its figure"
    assert "script" not in outline.tags
    assert EVIL_SCRIPT in "".join(outline.text)
    assert ("UNSANDBOXED" in dom) is (not sandboxed)

    shot = tmp_path / "page.png"
    render_with_chromium(tmp_path, f"--screenshot={shot}", "--window-size=1200,2400", url)
    width, height, rows = png_pixels(shot)
    assert (width, height) == (1200, 2400)
    bpp = len(rows[0]) // width
    colours = {rows[y][x * bpp : x * bpp + 3] for y in range(0, height, 7) for x in range(0, width, 7)}
    assert len(colours) > 50, f"the screenshot is nearly blank: {len(colours)} colours"
    r, g, b = _rgb(rows, 10, 10, bpp)  # inside the banner, above the title
    banner_is_red = r > 150 and g < 80 and b < 80
    assert banner_is_red is (not sandboxed), (r, g, b)


def test_plots_are_drawn_where_a_person_reads_them() -> None:
    """A pass close to its limit (the sample's TTFT, margin 0.82) has its plots, with its closest call; the
    same pass clear of its limits has none drawn, and says so."""
    grade = sample_grade()
    near = _outline(to_html(grade))
    assert near.svg_in == PLOTS
    assert "request 7: TTFT stops +16 ms" in " ".join(near.text)
    grade.criteria[0].margin = 0.2
    clear = _outline(to_html(grade))
    assert clear.svg_in == [p for p in PLOTS if "loadgen-ttft" not in p]
    assert "Not drawn: it passed clear of its limits" in " ".join(clear.text)
