"""More requests than server slots raise p90 TTFT: the queue is the server's, and TTFT shows it.

Every expectation follows from the slots and token rate the server has (`server.settings()`), not from the ones
asked for: a grade may start these servers with others drawn (FAKE_SERVER_DRAW), and the queue's arithmetic
must still hold.
"""

from __future__ import annotations

ANSWER_TOKENS = 32


def crowdable_server(fake_server):
    """A server, its slots, and how long one answer takes on it (about 0.32 s as asked; a draw makes it shorter)."""
    server = fake_server(max_num_seqs=2, token_rate=100.0, output_len_min=ANSWER_TOKENS,
                         output_len_max=ANSWER_TOKENS)
    got = server.settings()
    return server, got["max_num_seqs"], ANSWER_TOKENS / got["token_rate"]


def test_more_requests_than_slots_raise_p90_ttft(fake_server, load):
    server, slots, answer = crowdable_server(fake_server)
    roomy = load(server, requests=slots, concurrency=slots).summary()
    crowded = load(server, requests=4 * slots, concurrency=4 * slots).summary()
    assert roomy.ttft.n == slots and crowded.ttft.n == 4 * slots
    # One slot each: nobody queues. Four requests a slot: four waves; the p90 (rank ceil(0.9 x 4s) > 3s) is in the
    # last, and waits for three answers. (No bound on the roomy run alone: on a busy machine its own TTFT grows,
    # while the queue still adds three answers.)
    assert crowded.ttft.p90 > 2.5 * answer
    assert crowded.ttft.p90 > roomy.ttft.p90 + 2 * answer


def test_same_server_p90_rises_when_concurrency_exceeds_slots(fake_server, load):
    server, slots, answer = crowdable_server(fake_server)
    within = load(server, requests=3 * slots, concurrency=slots).summary()
    beyond = load(server, requests=3 * slots, concurrency=3 * slots).summary()
    # Within the slots, a request waits in the client (not in TTFT); beyond them, three waves wait in the server.
    assert beyond.ttft.p90 > within.ttft.p90 + answer
