"""Item analysis of a round against a hand computation, and its CSV and page (grader/round/items.py)."""

from __future__ import annotations

import csv
import io
import math
from pathlib import Path

import pytest
from round_builder import write_report

from grader.round.analysis import analyse
from grader.round.items import item_analysis, pearson
from grader.round.summary import read_rows, summary_files

# Four candidates, five criteria; a fifth candidate was graded on `a` only and it was inconclusive.
#            a (loadgen, 1)  b (gateway, 2)  c (memo, 1)  d (sizing, 1)  e (loadgen, 1)   total
#   p1       1 passed        2 passed        1 passed     0 failed       1 passed         5
#   p2       1 passed        1 failed        1 passed     0 failed       0 failed         3
#   p3       0 failed        2 passed        1 passed     0 failed       0 failed         3
#   p4       0 failed        0 failed        1 passed     0 failed       1 passed         2
ROUND = {
    "p1": [
        ("a", 1, 1, "passed"),
        ("b", 2, 2, "passed"),
        ("c", 1, 1, "passed"),
        ("d", 1, 0, "failed"),
        ("e", 1, 1, "passed"),
    ],
    "p2": [
        ("a", 1, 1, "passed"),
        ("b", 2, 1, "failed"),
        ("c", 1, 1, "passed"),
        ("d", 1, 0, "failed"),
        ("e", 1, 0, "failed"),
    ],
    "p3": [
        ("a", 1, 0, "failed"),
        ("b", 2, 2, "passed"),
        ("c", 1, 1, "passed"),
        ("d", 1, 0, "failed"),
        ("e", 1, 0, "failed"),
    ],
    "p4": [
        ("a", 1, 0, "failed"),
        ("b", 2, 0, "failed"),
        ("c", 1, 1, "passed"),
        ("d", 1, 0, "failed"),
        ("e", 1, 1, "passed"),
    ],
    "p5": [("a", 1, 0, "inconclusive")],
}
DELIVERABLE = {"a": "loadgen", "b": "gateway", "c": "memo", "d": "sizing", "e": "loadgen"}

# By hand. a: points (1, 1, 0, 0), rest of the total (4, 2, 3, 2), means 0.5 and 2.75;
#   deviations (.5, .5, -.5, -.5) and (1.25, -.75, .25, -.75); Sxy = .625 - .375 - .125 + .375 = 0.5,
#   Sxx = 1, Syy = 1.5625 + .5625 + .0625 + .5625 = 2.75; r = 0.5 / sqrt(2.75).
# b: points (2, 1, 2, 0), rest (3, 2, 1, 2); deviations (.75, -.25, .75, -1.25) and (1, 0, -1, 0); Sxy = 0: r = 0.
# e: points (1, 0, 0, 1), rest (4, 3, 3, 1), means 0.5 and 2.75; deviations (.5, -.5, -.5, .5) and
#   (1.25, .25, .25, -1.75); Sxy = .625 - .125 - .125 - .875 = -0.5, Sxx = 1, Syy = 4.75; r = -0.5 / sqrt(4.75).
# c: everyone passes, d: everyone fails; neither varies, so no r.
EXPECTED = {  # pass rate, mean points, discrimination, flags
    "a": (0.5, 0.5, 0.5 / math.sqrt(2.75), []),
    "b": (0.5, 1.25, 0.0, []),
    "c": (1.0, 1.0, None, ["everyone passes"]),
    "d": (0.0, 0.0, None, ["everyone fails"]),
    "e": (0.5, 0.5, -0.5 / math.sqrt(4.75), ["negative discrimination"]),
}


@pytest.fixture
def small_round(tmp_path: Path) -> Path:
    for name, criteria in ROUND.items():
        write_report(tmp_path / name, name.upper(), [(c, DELIVERABLE[c], w, p, st) for c, w, p, st in criteria])
    return tmp_path


def test_item_figures_equal_the_hand_computation(small_round: Path) -> None:
    items = {i.criterion: i for i in item_analysis(read_rows(small_round))}
    assert list(items) == ["a", "b", "c", "d", "e"]
    assert items["a"].graded == 4  # p5's inconclusive grade says nothing about p5
    for cid, (rate, mean, r, flags) in EXPECTED.items():
        item = items[cid]
        assert item.pass_rate == pytest.approx(rate) and item.mean_score == pytest.approx(mean), cid
        assert (item.discrimination is None) if r is None else item.discrimination == pytest.approx(r, abs=1e-12), cid
        assert item.flags == flags, cid
        assert item.deliverable == DELIVERABLE[cid]


def test_items_csv_and_the_page_carry_the_same_figures(small_round: Path) -> None:
    rows = read_rows(small_round)
    files = summary_files(rows, analyse(small_round, rows, threshold=None))
    table = {r["criterion"]: r for r in csv.DictReader(io.StringIO(files["items.csv"]))}
    assert float(table["e"]["discrimination"]) == pytest.approx(-0.5 / math.sqrt(4.75), abs=1e-4)
    assert table["c"]["discrimination"] == "" and table["c"]["flags"] == "everyone passes"
    assert table["a"]["graded"] == "4"
    spread = list(csv.DictReader(io.StringIO(files["deliverables.csv"])))
    loadgen = {r["name"]: (float(r["points"]), float(r["max_points"])) for r in spread if r["deliverable"] == "loadgen"}
    assert loadgen == {"p1": (2, 2), "p2": (1, 2), "p3": (0, 2), "p4": (1, 2)}  # p5: nothing graded
    page = files["index.html"]
    assert "Item analysis: 3 of 5 criteria flagged" in page
    assert page.count("<svg") == 1 + 4  # the missed chart, and one plot per deliverable
    assert "<script" not in page


def test_pearson_is_undefined_without_spread_or_with_fewer_than_three() -> None:
    assert pearson([1, 1, 1], [1, 2, 3]) is None
    assert pearson([1, 2], [2, 1]) is None
    assert pearson([1, 2, 3], [3, 2, 1]) == pytest.approx(-1.0)
