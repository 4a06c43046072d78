"""SSE framing variants fed straight to the parser: every one must give the same events."""

from __future__ import annotations

import pytest

from loadgen import SSEDecoder

CHUNK = '{"choices":[{"index":0,"delta":{"content":" hi"}}]}'
EXPECTED = [CHUNK, CHUNK, "[DONE]"]


def decode(*reads: bytes) -> list[str]:
    decoder = SSEDecoder()
    return [event.data for read in reads for event in decoder.feed(read)]


FRAMINGS = {
    "lf, as vLLM": f"data: {CHUNK}\n\ndata: {CHUNK}\n\ndata: [DONE]\n\n",
    "no space after data:": f"data:{CHUNK}\n\ndata:{CHUNK}\n\ndata:[DONE]\n\n",
    "crlf": f"data: {CHUNK}\r\n\r\ndata: {CHUNK}\r\n\r\ndata: [DONE]\r\n\r\n",
    "lone cr": f"data: {CHUNK}\r\rdata: {CHUNK}\r\rdata: [DONE]\r\r",
    "ping comments": f": ping\n\ndata: {CHUNK}\n\n: ping - 2024-01-01\n\ndata: {CHUNK}\n:\n\ndata: [DONE]\n\n",
    "other fields": (f"event: message\nid: 1\nretry: 100\ndata: {CHUNK}\n\n"
                     f"id: 2\ndata: {CHUNK}\n\nfoo: bar\ndata: [DONE]\n\n"),
    "byte-order mark": f"\ufeffdata: {CHUNK}\n\ndata: {CHUNK}\n\ndata: [DONE]\n\n",
    "blank lines between events": f"\n\ndata: {CHUNK}\n\n\n\ndata: {CHUNK}\n\n\ndata: [DONE]\n\n",
}


@pytest.mark.parametrize("raw", FRAMINGS.values(), ids=FRAMINGS.keys())
def test_framings_give_the_same_events(raw):
    assert decode(raw.encode()) == EXPECTED


@pytest.mark.parametrize("raw", FRAMINGS.values(), ids=FRAMINGS.keys())
def test_events_split_across_reads_at_every_byte(raw):
    data = raw.encode()
    for cut in range(len(data) + 1):
        assert decode(data[:cut], data[cut:]) == EXPECTED, f"split at byte {cut}"


@pytest.mark.parametrize("raw", FRAMINGS.values(), ids=FRAMINGS.keys())
def test_one_byte_per_read(raw):
    data = raw.encode()
    assert decode(*(data[i:i + 1] for i in range(len(data)))) == EXPECTED


def test_crlf_split_between_cr_and_lf_is_one_line_end():
    assert decode(b"data: a\r", b"\n\r", b"\ndata: b\r\n\r\n") == ["a", "b"]


def test_multi_line_data_is_joined_with_newlines():
    assert decode(b"data: {\"a\":\ndata: 1}\n\n") == ['{"a":\n1}']


def test_only_one_space_after_the_colon_is_removed():
    assert decode(b"data:  two spaces\n\n") == [" two spaces"]


def test_multibyte_character_split_across_reads():
    data = "data: caf\u00e9 \u2603\n\n".encode()
    assert decode(data[:9], data[9:15], data[15:]) == ["caf\u00e9 \u2603"]


def test_an_event_without_its_blank_line_is_not_complete():
    decoder = SSEDecoder()
    assert decoder.feed(b"data: [DONE]\n") == []
    assert decoder.feed(b"data: [DO") == []  # the stream might end here: nothing was completed


def test_event_type_is_kept():
    (event,) = SSEDecoder().feed(b"event: error\ndata: {\"error\": \"x\"}\n\n")
    assert (event.event, event.data) == ("error", '{"error": "x"}')
