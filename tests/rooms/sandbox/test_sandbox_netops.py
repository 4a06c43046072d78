"""The grader's reader of a gateway's answers (grader/sandbox/netops.py) against a real socket server.

It must see a stream as a standards-following client does, whatever the framing: CRLF, LF or a
lone CR, a line end split between two writes, comments, multi-line `data:`, and an event the
stream never finishes (a client drops it, so the grader must not count it).
"""

from __future__ import annotations

import socket
import threading
import time

from grader.sandbox.netops import http_request

HEAD = b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\nconnection: close\r\n\r\n"


def _serve_once(writes: list[bytes]) -> str:
    """A loopback server that answers one request with these writes (each its own send), then closes."""
    listener = socket.create_server(("127.0.0.1", 0))
    listener.settimeout(10)

    def serve() -> None:
        with listener:
            conn, _ = listener.accept()
            with conn:
                conn.recv(65536)
                for piece in (HEAD, *writes):
                    conn.sendall(piece)
                    time.sleep(0.02)  # so the client reads them apart
                # End the answer, then read what is left of the request until the client closes:
                # closing with unread bytes would reset the connection instead of ending it.
                conn.shutdown(socket.SHUT_WR)
                while conn.recv(65536):
                    pass

    threading.Thread(target=serve, daemon=True).start()
    return f"http://127.0.0.1:{listener.getsockname()[1]}/v1/chat/completions"


def _events(writes: list[bytes]) -> list[str]:
    answer = http_request("POST", _serve_once(writes), json={"stream": True}, stream=True, timeout_s=10)
    assert answer["status"] == 200 and answer["error"] is None, answer
    times = [t for t, _ in answer["events"]]
    assert times == sorted(times)
    return [data for _, data in answer["events"]]


def test_every_line_ending_and_a_line_end_split_between_writes() -> None:
    writes = [b'data: {"a": 1}\r\n\r\n', b'data:{"b": 2}\r', b"\r", b'data: {"c": 3}\r', b"\n\r\n", b"data: [DONE]\n\n"]
    assert _events(writes) == ['{"a": 1}', '{"b": 2}', '{"c": 3}', "[DONE]"]


def test_comments_other_fields_and_multi_line_data() -> None:
    writes = [b": keep-alive\n\n", b"event: message\nid: 7\ndata: first\ndata:  second\ndata\n\n", b"data: [DONE]\n\n"]
    assert _events(writes) == ["first\n second\n", "[DONE]"]


def test_an_event_the_stream_never_finishes_is_not_dispatched() -> None:
    answer = http_request("POST", _serve_once([b"data: whole\n\n", b"data: [DONE]\n"]), stream=True, timeout_s=10)
    assert [data for _, data in answer["events"]] == ["whole"]
    assert "data: [DONE]" in answer["body"]  # the bytes are kept for the report, not counted as an event
