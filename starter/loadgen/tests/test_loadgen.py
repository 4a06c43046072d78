"""Your load generator's tests. YOURS TO WRITE; TASK.md lists what they must cover.

Test the percentile function that submission.yaml names (`from loadgen.loadgen import percentile`),
in this process: the grader swaps wrong methods in for it and expects these tests to fail then.

The kit's pytest plugin gives you real fake servers (the grader also runs these tests against a
server whose slot limit is removed, and expects the slot test to fail there):

    def test_more_requests_than_slots_raise_p90_ttft(fake_server):
        server = fake_server(max_num_seqs=2, token_rate=200)
        ... run your load generator against server.openai_base_url ...
"""

import pytest


@pytest.mark.skip(reason="TODO: nearest-rank percentiles on known lists")
def test_nearest_rank_percentiles() -> None:
    ...


@pytest.mark.skip(reason="TODO: more requests than server slots raise p90 TTFT")
def test_queueing_raises_p90_ttft(fake_server) -> None:
    ...
