"""`grader selftest`, the second of three shares (tests/selftest_shards.py): every chaff in it loses exactly its targets."""

from __future__ import annotations

import pytest
from selftest_shards import graded_as_expected

pytestmark = pytest.mark.slow


def test_every_chaff_of_the_second_share_loses_exactly_its_targets():
    graded_as_expected(2)
