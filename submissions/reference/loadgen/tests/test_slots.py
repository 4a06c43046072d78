"""More requests than server slots raise p90 TTFT: the queue is the server's, and TTFT shows it."""

from __future__ import annotations

ANSWER_TOKENS = 24
TOKEN_RATE = 100.0  # one answer takes about 24 / 100 = 0.24 s: wide enough for a busy machine


def server_with(fake_server, slots: int):
    return fake_server(max_num_seqs=slots, token_rate=TOKEN_RATE, output_len_min=ANSWER_TOKENS,
                       output_len_max=ANSWER_TOKENS)


def test_more_requests_than_slots_raise_p90_ttft(fake_server, load):
    answer = ANSWER_TOKENS / TOKEN_RATE
    roomy = load(server_with(fake_server, slots=8), requests=8, concurrency=8).summary()
    crowded = load(server_with(fake_server, slots=2), requests=8, concurrency=8).summary()
    assert roomy.ttft.n == crowded.ttft.n == 8
    # Eight slots: nobody queues. Two slots: four waves; the p90 (rank 8 of 8) waits for three answers. (No bound
    # on the roomy run alone: on a busy machine its own TTFT grows, while the queue still adds three answers.)
    assert crowded.ttft.p90 > 2.5 * answer
    assert crowded.ttft.p90 > roomy.ttft.p90 + 2 * answer


def test_same_server_p90_rises_when_concurrency_exceeds_slots(fake_server, load):
    server = server_with(fake_server, slots=2)
    within = load(server, requests=6, concurrency=2).summary()
    beyond = load(server, requests=6, concurrency=6).summary()
    assert beyond.ttft.p90 > within.ttft.p90 + ANSWER_TOKENS / TOKEN_RATE
