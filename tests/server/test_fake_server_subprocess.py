"""serve_subprocess: the child's output goes to a file, so a chatty child never blocks."""

from __future__ import annotations

import socket
import time
from pathlib import Path

import httpx
import pytest
from conftest import chat_body

from fake_server import serve_subprocess

MALFORMED = 2_000


def _garbage(port: int) -> bytes:
    """One request uvicorn cannot parse; it logs a warning for each and answers 400."""
    with socket.create_connection(("127.0.0.1", port), timeout=10) as sock:
        sock.sendall(b"NOT HTTP AT ALL \x00\x01\r\n\r\n")
        return sock.recv(4096)


def test_two_thousand_malformed_requests_and_the_child_still_answers() -> None:
    with serve_subprocess("--token-rate", "500") as server:
        start = time.monotonic()
        answers = [_garbage(server.port) for _ in range(MALFORMED)]
        assert time.monotonic() - start < 120
        assert all(a.startswith(b"HTTP/1.1 400") for a in answers)
        r = httpx.post(
            server.openai_base_url + "/chat/completions", json=chat_body(stream=False, max_tokens=4), timeout=10
        )
        assert r.status_code == 200 and r.json()["usage"]["completion_tokens"] == 4
        log = server.log_text()
        assert log.count("Invalid HTTP request received") == MALFORMED
        path = server.log_path
        assert path is not None and path.exists()
    assert not path.exists()  # a temporary log goes with the server


def test_a_named_log_file_is_kept_and_a_failed_start_says_why(tmp_path: Path) -> None:
    log = tmp_path / "server.log"
    with serve_subprocess("--token-rate", "500", log=log) as server:
        assert server.log_path == log
    assert "serving fake-model on http://127.0.0.1:" in log.read_text()
    with pytest.raises(RuntimeError, match="did not start: .*--max-num-seqs"), serve_subprocess("--max-num-seqs", "0"):
        pass
