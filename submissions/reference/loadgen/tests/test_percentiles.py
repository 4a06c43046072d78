"""Nearest-rank percentiles on lists whose answers are known."""

from __future__ import annotations

import math

import pytest

from loadgen.percentiles import nearest_rank, percentiles  # the function submission.yaml names, from its module

# The seed's case: eight requests, one of them slow.
EIGHT_TTFTS = [0.21, 0.25, 0.19, 0.30, 0.22, 0.95, 0.24, 0.27]


def linear(values: list[float], p: float) -> float:
    """numpy's default ('linear') percentile, written out to show what nearest rank avoids."""
    ordered = sorted(values)
    h = (len(ordered) - 1) * p / 100
    lo = math.floor(h)
    hi = min(lo + 1, len(ordered) - 1)
    return ordered[lo] + (h - lo) * (ordered[hi] - ordered[lo])


def test_with_eight_requests_p90_and_p99_are_both_the_slowest():
    p = percentiles(EIGHT_TTFTS)
    assert p.n == 8
    assert p.p90 == p.p99 == p.max == 0.95  # rank ceil(0.9 * 8) = 8 and ceil(0.99 * 8) = 8
    assert p.p99_is_max
    assert p.p50 == 0.24  # rank 4 of 0.19 0.21 0.22 0.24 0.25 0.27 0.30 0.95


def test_linear_interpolation_would_report_values_nobody_measured():
    assert linear(EIGHT_TTFTS, 90) == pytest.approx(0.495)  # between 0.30 and 0.95: no request took that long
    assert linear(EIGHT_TTFTS, 99) == pytest.approx(0.9045)  # below the slowest request, though n < 100
    assert linear(EIGHT_TTFTS, 90) not in EIGHT_TTFTS
    assert nearest_rank(EIGHT_TTFTS, 90) in EIGHT_TTFTS


@pytest.mark.parametrize(("values", "expected"), [
    # Wikipedia's worked examples of the nearest-rank method.
    ([15, 20, 35, 40, 50], {5: 15, 30: 20, 40: 20, 50: 35, 100: 50}),
    ([3, 6, 7, 8, 8, 10, 13, 15, 16, 20], {25: 7, 50: 8, 75: 15, 100: 20}),
    ([3, 6, 7, 8, 8, 9, 10, 13, 15, 16, 20], {25: 7, 50: 9, 75: 15, 100: 20}),
    (list(range(1, 11)), {50: 5, 90: 9, 99: 10, 10: 1, 11: 2}),
])
def test_known_lists(values, expected):
    for p, value in expected.items():
        assert nearest_rank(values, p) == value, f"p{p}"


def test_one_to_ten_differs_from_linear():
    values = list(range(1, 11))
    assert (nearest_rank(values, 50), linear(values, 50)) == (5, 5.5)
    assert nearest_rank(values, 90) == 9 and linear(values, 90) == pytest.approx(9.1)


def test_order_of_input_does_not_matter():
    assert percentiles([5, 1, 4, 2, 3]) == percentiles([1, 2, 3, 4, 5])
    # The function itself sorts: the values come in the order the requests finished.
    assert [nearest_rank([5, 1, 4, 2, 3], p) for p in (20, 40, 60, 80, 100)] == [1, 2, 3, 4, 5]
    assert nearest_rank(EIGHT_TTFTS, 50) == 0.24 and nearest_rank(EIGHT_TTFTS, 90) == 0.95


def test_rank_is_exact_where_floats_are_not():
    values = list(range(1, 101))
    assert 7 / 100 * 100 > 7  # in floats; a naive ceil would take rank 8
    assert nearest_rank(values, 7) == 7
    assert nearest_rank(values, 99.9) == 100


def test_p99_is_the_maximum_below_100_samples_and_not_from_100_on():
    p99 = percentiles(range(1, 100))
    assert (p99.n, p99.p99, p99.max, p99.p99_is_max) == (99, 99, 99, True)
    p100 = percentiles(range(1, 101))
    assert (p100.n, p100.p99, p100.max, p100.p99_is_max) == (100, 99, 100, False)


def test_no_samples_gives_nulls_not_zeros():
    p = percentiles([])
    assert (p.n, p.p50, p.p90, p.p99, p.max) == (0, None, None, None, None)
    assert p.to_contract() == {"n": 0, "p50": None, "p90": None, "p99": None, "max": None, "p99_is_max": True}


def test_one_sample_is_every_percentile():
    p = percentiles([0.3])
    assert p.p50 == p.p90 == p.p99 == p.max == 0.3


@pytest.mark.parametrize("p", [0, -1, 100.5, float("nan")])
def test_percentile_out_of_range_is_an_error(p):
    with pytest.raises(ValueError, match="percentile"):
        nearest_rank([1, 2, 3], p)
