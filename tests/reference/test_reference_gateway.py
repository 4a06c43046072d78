"""The reference gateway (submissions/reference/gateway) against two fake servers, a local one and the API
persona: every routing rule and edge of the contract (docs/contract.md), each checked in both ledgers (where every
request went, and how many times).

The gateway runs as the grader runs a submission: a child process started with
`--config FILE --port N` from `submissions/reference/`, with `starter/` on PYTHONPATH.
"""

from __future__ import annotations

import asyncio
import contextlib
import importlib.util
import json
import os
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import pytest
import yaml
from api_client import SSEDecoder
from kit_paths import ROOT

from fake_server import RunningServer, serve, tokenizer
from grader.contract import SCHEMA_DIR, schema_errors

REFERENCE = ROOT / "submissions" / "reference"
GATEWAY = ["gateway/gateway.py"]  # the submission's gateway.command, run from submissions/reference/
LOCAL_MODEL, API_MODEL, KEY = "qwen3-8b", "opus-5.5", "sk-test-gateway-0001"
MAX_MODEL_LEN = 256
FIRST_BYTE_S = 0.4  # local route; every stall below is well past it
STALL_S = 1.0
INTERVAL_S = 0.1
WAIT_S = 5.0  # upper bound of every polling loop


# -- running things ----------------------------------------------------------------------------


@dataclass
class Servers:
    local: RunningServer
    api: RunningServer


@dataclass
class Streamed:
    status: int
    headers: httpx.Headers
    events: list[tuple[float, str]] = field(default_factory=list)  # (receive time, data payload)
    body: bytes = b""

    @property
    def payloads(self) -> list[str]:
        return [data for _, data in self.events]

    def chunks(self) -> list[dict[str, Any]]:
        return [json.loads(d) for d in self.payloads if d != "[DONE]"]

    def content(self) -> list[str]:
        """The content deltas, in order (role-only, finish and usage chunks carry none)."""
        return [text for _, text in self.content_events()]

    def content_events(self) -> list[tuple[float, str]]:
        out = []
        for received, data in self.events:
            chunk = json.loads(data) if data != "[DONE]" else {}
            text = (chunk.get("choices") or [{}])[0].get("delta", {}).get("content")
            if text:
                out.append((received, text))
        return out


class Gateway:
    """A running gateway process and the requests the tests send it."""

    def __init__(self, url: str, process: subprocess.Popen[bytes], log: Path) -> None:
        self.url, self.process, self.log = url, process, log

    def post(self, body: dict[str, Any]) -> httpx.Response:
        return httpx.post(self.url + "/v1/chat/completions", json=body, timeout=30)

    def stream(self, body: dict[str, Any]) -> Streamed:
        with httpx.stream("POST", self.url + "/v1/chat/completions", json={**body, "stream": True}, timeout=30) as r:
            out = Streamed(r.status_code, r.headers)
            if r.status_code != 200 or not r.headers["content-type"].startswith("text/event-stream"):
                out.body = r.read()
                return out
            decoder = SSEDecoder()
            for text in r.iter_text():
                now = time.time()
                out.events += [(now, data) for data in decoder.feed(text)]
            return out

    def stats(self) -> dict[str, Any]:
        stats: dict[str, Any] = httpx.get(self.url + "/stats", timeout=10).json()
        assert schema_errors("gateway-stats", stats) == []
        return stats

    def sees_local(self, healthy: bool) -> None:
        """Wait (bounded) until the gateway's health probe has seen the local route as `healthy`."""
        deadline = time.monotonic() + WAIT_S
        while httpx.get(self.url + "/health", timeout=5).json()["local"]["healthy"] is not healthy:
            assert time.monotonic() < deadline, (
                f"the gateway never saw the local route as healthy={healthy}; its log:\n{self.log.read_text()}"
            )
            time.sleep(0.02)


def gateway_config(local: RunningServer | str, api: RunningServer, **local_extra: Any) -> dict[str, Any]:
    base = local.openai_base_url if isinstance(local, RunningServer) else local
    return {
        "contract": 4,
        "local": {
            "base_url": base,
            "model": LOCAL_MODEL,
            "health_url": base.removesuffix("/v1") + "/health",
            "health_interval_s": INTERVAL_S,
            "timeouts": {"connect_s": 0.5, "first_byte_s": FIRST_BYTE_S, "total_s": 5.0},
            **local_extra,
        },
        "api": {
            "base_url": api.openai_base_url,
            "model": API_MODEL,
            "api_key": KEY,
            "prices": {"input_per_million_usd": 4.0, "output_per_million_usd": 20.0},
            "timeouts": {"connect_s": 0.5, "first_byte_s": 1.0, "total_s": 10.0},
        },
    }


def _start(config: dict[str, Any] | str, folder: Path) -> tuple[subprocess.Popen[bytes], Path, Path]:
    if isinstance(config, dict):
        assert schema_errors("gateway-config", config) == [], "the tests must give the gateway contract configs"
    path = folder / "gateway.yaml"
    path.write_text(config if isinstance(config, str) else yaml.safe_dump(config))
    out, err = folder / "stdout.txt", folder / "stderr.txt"
    env = {**os.environ, "PYTHONPATH": str(ROOT / "starter")}
    with out.open("wb") as stdout, err.open("wb") as stderr:  # files, not pipes: a chatty child never blocks
        process = subprocess.Popen(
            [sys.executable, *GATEWAY, "--config", str(path), "--port", "0"],
            cwd=REFERENCE,
            stdout=stdout,
            stderr=stderr,
            env=env,
        )
    return process, out, err


@contextlib.contextmanager
def run_gateway(config: dict[str, Any], folder: Path) -> Iterator[Gateway]:
    folder.mkdir(parents=True, exist_ok=True)
    process, out, err = _start(config, folder)
    try:
        deadline = time.monotonic() + 15
        while "listening on" not in out.read_text():
            assert process.poll() is None, f"the gateway exited: {err.read_text()}"
            assert time.monotonic() < deadline, f"the gateway did not start: {err.read_text()}"
            time.sleep(0.02)
        yield Gateway(out.read_text().split()[-1], process, err)
    finally:
        process.terminate()
        try:
            process.wait(10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


@pytest.fixture(scope="module")
def servers() -> Iterator[Servers]:
    with (
        serve(
            served_model_name=[LOCAL_MODEL], max_model_len=MAX_MODEL_LEN, kv_cache_tokens=65536, token_rate=1000
        ) as local,
        serve(persona="api", api_key=KEY, token_rate=1000) as api,
    ):
        yield Servers(local, api)


@pytest.fixture(scope="module")
def shared_gateway(servers: Servers, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Gateway]:
    with run_gateway(gateway_config(servers.local, servers.api), tmp_path_factory.mktemp("gateway")) as gw:
        yield gw


@pytest.fixture
def gw(servers: Servers, shared_gateway: Gateway) -> Gateway:
    """The shared gateway, with both servers back to a clean state and the gateway seeing local healthy."""
    for server in (servers.local, servers.api):
        server.ledger()  # waits for requests still in flight (a stalled one) so none lands after the reset
        server.reset()
    shared_gateway.sees_local(True)
    return shared_gateway


def chat(content: str = "What is a KV cache?", max_tokens: int | None = 8, **extra: Any) -> dict[str, Any]:
    body: dict[str, Any] = {"model": "whatever-the-client-says", "messages": [{"role": "user", "content": content}]}
    if max_tokens is not None:
        body["max_tokens"] = max_tokens
    return {**body, **extra}


def prompt_tokens(body: dict[str, Any]) -> int:
    return tokenizer.count(tokenizer.render_chat(body["messages"]))


def route_of(response: httpx.Response | Streamed) -> tuple[str, str]:
    return response.headers["x-gateway-route"], response.headers["x-gateway-attempts"]


# -- the local route serves when it can ----------------------------------------------------------


def test_a_healthy_local_route_serves_and_names_its_model(gw: Gateway, servers: Servers) -> None:
    whole = gw.post(chat())
    streamed = gw.stream(chat(stream_options={"include_usage": True}))
    assert whole.status_code == 200 and route_of(whole) == ("local", "local")
    assert whole.json()["model"] == LOCAL_MODEL and whole.json()["choices"][0]["message"]["content"]
    assert streamed.status == 200 and route_of(streamed) == ("local", "local")
    assert streamed.payloads[-1] == "[DONE]" and {c["model"] for c in streamed.chunks()} == {LOCAL_MODEL}
    local = servers.local.ledger()
    assert [(r["status"], r["model"], r["stream"]) for r in local] == [
        (200, LOCAL_MODEL, False),
        (200, LOCAL_MODEL, True),
    ]
    assert len(streamed.content()) == local[1]["completion_tokens"] == 8
    assert servers.api.ledger() == []


# -- fallback before the first byte --------------------------------------------------------------


@pytest.mark.parametrize("stream", [False, True], ids=["whole", "stream"])
@pytest.mark.parametrize("status", [500, 502, 503])
def test_a_local_5xx_falls_back_to_the_api_once(gw: Gateway, servers: Servers, status: int, stream: bool) -> None:
    servers.local.set_faults([{"kind": "http_error", "status": status}])
    response = gw.stream(chat()) if stream else gw.post(chat())
    assert (response.status if isinstance(response, Streamed) else response.status_code) == 200
    assert route_of(response) == ("api", "local,api")
    if isinstance(response, Streamed):
        assert response.payloads[-1] == "[DONE]" and {c["model"] for c in response.chunks()} == {API_MODEL}
    else:
        assert response.json()["model"] == API_MODEL
    assert [r["status"] for r in servers.local.ledger()] == [status]
    assert [(r["status"], r["model"]) for r in servers.api.ledger()] == [(200, API_MODEL)]


@pytest.mark.parametrize(
    "kind,stream", [("stall_before_headers", False), ("stall_before_headers", True), ("stall_after_headers", True)]
)
def test_a_local_timeout_falls_back_after_first_byte_s(gw: Gateway, servers: Servers, kind: str, stream: bool) -> None:
    servers.local.set_faults([{"kind": kind, "seconds": STALL_S}])
    started = time.monotonic()
    response = gw.stream(chat()) if stream else gw.post(chat())
    elapsed = time.monotonic() - started
    assert route_of(response) == ("api", "local,api")
    assert FIRST_BYTE_S <= elapsed < STALL_S, "the gateway must give up on the local route at first_byte_s"
    assert len(servers.local.ledger()) == 1 and len(servers.api.ledger()) == 1


@pytest.mark.parametrize(
    "fault",
    [
        {"kind": "cut", "after_tokens": 2},
        {"kind": "malformed_chunk", "after_tokens": 2},
        {"kind": "stream_error", "after_tokens": 2},
    ],
    ids=lambda f: f["kind"],
)
def test_a_broken_whole_answer_falls_back_since_nothing_reached_the_client(
    gw: Gateway, servers: Servers, fault: dict[str, Any]
) -> None:
    """Without streaming the client has received nothing when the local answer turns out broken."""
    servers.local.set_faults([fault])
    response = gw.post(chat())
    assert response.status_code == 200 and route_of(response) == ("api", "local,api")
    assert response.json()["model"] == API_MODEL
    assert len(servers.local.ledger()) == 1 and len(servers.api.ledger()) == 1


def test_a_refused_local_route_falls_back_and_require_local_gets_503(servers: Servers, tmp_path: Path) -> None:
    """The local server is gone while its health URL still answers 200 (a stale health check, a sidecar):
    the refused attempt falls back, and under `require: local` it ends in a 503 that never reaches the API."""
    with serve(served_model_name=[LOCAL_MODEL]) as doomed:
        stopped_url = doomed.openai_base_url
    config = gateway_config(stopped_url, servers.api, health_url=servers.api.base_url + "/health")
    servers.api.ledger()
    servers.api.reset()
    with run_gateway(config, tmp_path) as gateway:
        fell_back = gateway.post(chat())
        assert fell_back.status_code == 200 and route_of(fell_back) == ("api", "local,api")
        kept = gateway.post(chat(require="local"))
        assert kept.status_code == 503 and route_of(kept) == ("none", "local")
        assert "require: local" in kept.json()["error"]["message"]
        stream_kept = gateway.stream(chat(require="local"))
        assert stream_kept.status == 503 and json.loads(stream_kept.body)["error"]
    assert len(servers.api.ledger()) == 1


def test_a_failed_attempt_triggers_a_probe_so_the_next_request_skips_the_dead_route(
    servers: Servers, tmp_path: Path
) -> None:
    """With a 30 s probe period only the probe run on failure can notice that the server died."""
    servers.api.ledger()
    servers.api.reset()
    with contextlib.ExitStack() as stack, contextlib.ExitStack() as local_lifetime:
        local = local_lifetime.enter_context(serve(served_model_name=[LOCAL_MODEL]))
        gateway = stack.enter_context(run_gateway(gateway_config(local, servers.api, health_interval_s=30.0), tmp_path))
        gateway.sees_local(True)
        local_lifetime.close()  # the local server stops: connections are refused, /health too
        first = gateway.post(chat())
        assert first.status_code == 200 and route_of(first) == ("api", "local,api")
        gateway.sees_local(False)
        started = time.monotonic()
        second = gateway.post(chat())
        assert route_of(second) == ("api", "api") and time.monotonic() - started < FIRST_BYTE_S
    assert len(servers.api.ledger()) == 2


# -- never a fallback on a 4xx, never after the first byte -----------------------------------------


@pytest.mark.parametrize("stream", [False, True], ids=["whole", "stream"])
@pytest.mark.parametrize("status", [400, 404, 429])
def test_a_local_4xx_is_passed_through_and_never_reaches_the_api(
    gw: Gateway, servers: Servers, status: int, stream: bool
) -> None:
    servers.local.set_faults([{"kind": "http_error", "status": status, "retry_after": 7}])
    response = gw.stream(chat()) if stream else gw.post(chat())
    body = json.loads(response.body if isinstance(response, Streamed) else response.content)
    assert (response.status if isinstance(response, Streamed) else response.status_code) == status
    assert route_of(response) == ("local", "local")
    (record,) = servers.local.ledger()
    assert record["status"] == status and body["error"]["message"] == record["error"]
    assert response.headers["retry-after"] == "7"
    assert servers.api.ledger() == []


def test_a_request_the_local_server_rejects_is_its_400_not_a_fallback(gw: Gateway, servers: Servers) -> None:
    response = gw.post({"messages": [{"role": "robot", "content": "hi"}], "max_tokens": 8})
    assert response.status_code == 400 and route_of(response) == ("local", "local")
    assert "role" in response.json()["error"]["message"]
    assert [r["status"] for r in servers.local.ledger()] == [400] and servers.api.ledger() == []


@pytest.mark.parametrize(
    "fault",
    [
        {"kind": "cut", "after_tokens": 3},
        {"kind": "no_done", "after_tokens": 3},
        {"kind": "stream_error", "after_tokens": 3},
        {"kind": "malformed_chunk", "after_tokens": 3},
    ],
    ids=lambda f: f["kind"],
)
def test_a_failure_after_the_first_byte_ends_the_stream_with_an_error(
    gw: Gateway, servers: Servers, fault: dict[str, Any]
) -> None:
    """The client already has content: it gets an error event and no [DONE], and the API never starts over."""
    servers.local.set_faults([fault])
    streamed = gw.stream(chat(max_tokens=12))
    assert streamed.status == 200 and route_of(streamed) == ("local", "local")
    assert "[DONE]" not in streamed.payloads
    assert "error" in json.loads(streamed.payloads[-1])
    assert len(streamed.content()) == 3, "each token once: nothing replayed, nothing from another route"
    assert len(servers.local.ledger()) == 1 and servers.api.ledger() == []


def test_an_api_failure_after_the_first_byte_also_ends_with_an_error(gw: Gateway, servers: Servers) -> None:
    servers.local.set_faults([{"kind": "http_error", "status": 500}])
    servers.api.set_faults([{"kind": "cut", "after_tokens": 3}])
    streamed = gw.stream(chat(max_tokens=12))
    assert streamed.status == 200 and route_of(streamed) == ("api", "local,api")
    assert "[DONE]" not in streamed.payloads and "error" in json.loads(streamed.payloads[-1])
    assert len(streamed.content()) == 3
    assert len(servers.local.ledger()) == 1 and len(servers.api.ledger()) == 1


# -- when no route is left ------------------------------------------------------------------------


def test_no_route_is_tried_twice_when_both_fail(gw: Gateway, servers: Servers) -> None:
    servers.local.set_faults([{"kind": "http_error", "status": 500}])
    servers.api.set_faults([{"kind": "http_error", "status": 503}])
    response = gw.post(chat())
    assert response.status_code == 502 and route_of(response) == ("none", "local,api")
    assert "HTTP 500" in response.json()["error"]["message"]
    assert len(servers.local.ledger()) == 1 and len(servers.api.ledger()) == 1


def test_an_api_timeout_after_a_local_failure_is_a_504(gw: Gateway, servers: Servers) -> None:
    servers.local.set_faults([{"kind": "http_error", "status": 500}])
    servers.api.set_faults([{"kind": "stall_before_headers", "seconds": 1.5}])  # past the API's first_byte_s of 1
    response = gw.post(chat())
    assert response.status_code == 504 and route_of(response) == ("none", "local,api")
    assert len(servers.local.ledger()) == 1 and len(servers.api.ledger()) == 1


def test_an_api_4xx_is_passed_through(gw: Gateway, servers: Servers) -> None:
    servers.local.set_faults([{"kind": "http_error", "status": 500}])
    servers.api.set_faults([{"kind": "http_error", "status": 429, "retry_after": 3}])
    response = gw.post(chat())
    assert response.status_code == 429 and route_of(response) == ("api", "local,api")
    assert response.headers["retry-after"] == "3" and response.json()["error"]["message"]
    assert [r["status"] for r in servers.api.ledger()] == [429]


# -- require: local --------------------------------------------------------------------------------

REQUIRE_LOCAL_CASES = {  # case: (local fault, status, x-gateway-attempts)
    "unhealthy": (None, 503, ""),
    "5xx": ({"kind": "http_error", "status": 500}, 503, "local"),
    "timeout": ({"kind": "stall_before_headers", "seconds": STALL_S}, 503, "local"),
    "cut": ({"kind": "cut", "after_tokens": 1}, 503, "local"),  # whole answers only: a streamed cut comes later
    "too long": (None, 400, ""),
}


@pytest.mark.parametrize(
    "case,stream",
    [(case, stream) for case in REQUIRE_LOCAL_CASES for stream in (False, True) if not (case == "cut" and stream)],
)
def test_require_local_never_reaches_the_api(gw: Gateway, servers: Servers, case: str, stream: bool) -> None:
    fault, status, attempts = REQUIRE_LOCAL_CASES[case]
    if fault is not None:
        servers.local.set_faults([fault])
    if case == "unhealthy":
        servers.local.set_healthy(False)
        gw.sees_local(False)
    body = chat("word " * (MAX_MODEL_LEN if case == "too long" else 3), require="local")
    response = gw.stream(body) if stream else gw.post(body)
    error = json.loads(response.body if isinstance(response, Streamed) else response.content)["error"]
    assert (response.status if isinstance(response, Streamed) else response.status_code) == status
    assert route_of(response) == ("none", attempts)
    assert "require: local" in error["message"]
    assert len(servers.local.ledger()) == (1 if attempts else 0)
    assert servers.api.ledger() == []


def test_require_local_still_gets_the_local_4xx(gw: Gateway, servers: Servers) -> None:
    servers.local.set_faults([{"kind": "http_error", "status": 404}])
    response = gw.post(chat(require="local"))
    assert response.status_code == 404 and route_of(response) == ("local", "local")
    assert servers.api.ledger() == []


@pytest.mark.parametrize("value", ["api", "LOCAL", "", 1, True, ["local"], {"route": "local"}])
def test_require_other_than_local_or_any_is_a_400(gw: Gateway, servers: Servers, value: Any) -> None:
    response = gw.post(chat(require=value))
    assert response.status_code == 400 and route_of(response) == ("none", "")
    assert response.json()["error"]["param"] == "require"
    assert servers.local.ledger() == [] and servers.api.ledger() == []


def test_require_any_is_the_default_and_may_be_said(gw: Gateway, servers: Servers) -> None:
    assert route_of(gw.post(chat(require="any"))) == ("local", "local")
    assert route_of(gw.post(chat(require=None))) == ("local", "local")  # null is as if left out
    servers.local.set_faults([{"kind": "http_error", "status": 500}])
    assert route_of(gw.post(chat(require="any"))) == ("api", "local,api")


# -- the checks before the local route -------------------------------------------------------------


def test_the_context_check_sends_too_long_prompts_straight_to_the_api(gw: Gateway, servers: Servers) -> None:
    fits = chat("word " * 100, max_tokens=None)
    exact = {**fits, "max_tokens": MAX_MODEL_LEN - prompt_tokens(fits)}  # prompt + max_tokens == limit
    over = {**fits, "max_tokens": MAX_MODEL_LEN - prompt_tokens(fits) + 1}
    assert route_of(gw.post(exact)) == ("local", "local")
    assert route_of(gw.post(fits)) == ("local", "local")  # no max_tokens: prompt < limit
    too_long = gw.post(over)
    assert too_long.status_code == 200 and route_of(too_long) == ("api", "api")
    streamed = gw.stream(chat("word " * MAX_MODEL_LEN))
    assert streamed.status == 200 and route_of(streamed) == ("api", "api") and streamed.payloads[-1] == "[DONE]"
    assert [r["status"] for r in servers.local.ledger()] == [200, 200], "no generation for a too-long prompt"
    assert len(servers.api.ledger()) == 2


def test_an_unhealthy_local_route_is_skipped_without_a_timeout(gw: Gateway, servers: Servers) -> None:
    """Were the gateway to try it, every request would pay first_byte_s on the stalled local server: the
    local ledger shows it never did (a wall-clock bound here failed on a busy machine, where the API's own
    answer took longer than first_byte_s)."""
    servers.local.set_faults([{"kind": "stall_before_headers", "seconds": STALL_S}])
    servers.local.set_healthy(False)
    gw.sees_local(False)
    for _ in range(5):
        assert route_of(gw.post(chat())) == ("api", "api")
    assert servers.local.ledger() == [] and len(servers.api.ledger()) == 5
    servers.local.set_faults([])
    servers.local.set_healthy(True)
    gw.sees_local(True)
    assert route_of(gw.post(chat())) == ("local", "local")


# -- streaming passes through as it arrives --------------------------------------------------------


@pytest.mark.parametrize("route", ["local", "api"])
def test_streaming_passes_each_chunk_through_as_it_arrives(gw: Gateway, servers: Servers, route: str) -> None:
    server = servers.local if route == "local" else servers.api
    server.configure(token_rate=40)  # 16 tokens over ~0.4 s
    if route == "api":
        servers.local.set_faults([{"kind": "http_error", "status": 500}])
    streamed = gw.stream(chat(max_tokens=16, ignore_eos=True))
    assert route_of(streamed)[0] == route and streamed.payloads[-1] == "[DONE]"
    record = server.ledger()[-1]
    sent = [t for t, kind, _ in record["chunks"] if kind == "content"]
    received = [t for t, _ in streamed.content_events()]
    assert len(sent) == len(received) == 16
    assert received[0] < sent[-1] - 0.2, "the first chunk must reach the client long before the stream ends"
    lags = sorted(r - s for r, s in zip(received, sent))
    assert lags[len(lags) // 2] < 0.05, f"chunks are held back: median lag {lags[len(lags) // 2]:.3f} s"


# -- /stats agrees with the ledgers ----------------------------------------------------------------


def test_stats_count_every_attempt_and_cost_what_the_api_billed(servers: Servers, tmp_path: Path) -> None:
    for server in (servers.local, servers.api):
        server.ledger()
        server.reset()
    with run_gateway(gateway_config(servers.local, servers.api), tmp_path) as gateway:
        assert gateway.stats() == {
            "contract": 4,
            "routes": {
                name: {
                    "requests": 0,
                    "failures": 0,
                    "fallbacks": 0,
                    "cost_usd": 0.0,
                    "latency_s": {"n": 0, "p50": None, "p90": None, "p99": None, "max": None, "p99_is_max": True},
                }
                for name in ("local", "api")
            },
        }
        gateway.post(chat())
        gateway.stream(chat(max_tokens=5))
        gateway.post(chat("word " * MAX_MODEL_LEN))  # too long: api only
        servers.local.set_faults(
            [
                {"kind": "http_error", "status": 500, "requests": [3, 4]},
                {"kind": "http_error", "status": 404, "requests": [5]},
            ]
        )
        gateway.post(chat(max_tokens=6))  # local 500 -> api
        gateway.stream(chat(max_tokens=7))  # local 500 -> api
        gateway.post(chat())  # local 404, passed through
        servers.local.set_faults([{"kind": "http_error", "status": 500}])
        gateway.post(chat(require="local"))  # local 500 -> 503
        stats = gateway.stats()["routes"]
    local, api = servers.local.ledger(), servers.api.ledger()
    assert stats["local"]["requests"] == len(local) == 6
    assert stats["local"]["failures"] == sum(r["status"] != 200 for r in local) == 4
    assert stats["local"]["fallbacks"] == 2
    assert stats["api"]["requests"] == len(api) == 3 and stats["api"]["failures"] == 0
    assert stats["api"]["fallbacks"] == 0
    assert stats["api"]["cost_usd"] == pytest.approx(sum(r["cost_usd"] for r in api), rel=1e-9)
    assert stats["api"]["cost_usd"] > 0 and stats["local"]["cost_usd"] == 0
    for name, records in (("local", [r for r in local if r["status"] == 200]), ("api", api)):
        latency = stats[name]["latency_s"]
        # the server's time: arrival to the last chunk handed to its socket (a whole answer: to `finished`)
        server_side = sorted(max((c[0] for c in r["chunks"]), default=r["finished"]) - r["arrival"] for r in records)
        assert latency["n"] == len(records) and latency["p99_is_max"] is True
        assert server_side[-1] <= latency["max"] + 0.005, "a route's latency includes the server's own time"
        assert latency["max"] < server_side[-1] + 0.25


def test_an_api_stream_cut_half_way_is_still_costed(servers: Servers, tmp_path: Path) -> None:
    """Every attempt's cost counts: the API bills what it generated before the cut."""
    for server in (servers.local, servers.api):
        server.ledger()
        server.reset()
    servers.local.set_faults([{"kind": "http_error", "status": 500}])
    servers.api.set_faults([{"kind": "cut", "after_tokens": 4}])
    try:
        with run_gateway(gateway_config(servers.local, servers.api), tmp_path) as gateway:
            streamed = gateway.stream(chat(max_tokens=12))
            stats = gateway.stats()["routes"]["api"]
    finally:
        servers.local.set_faults([])
        servers.api.set_faults([])
    assert "[DONE]" not in streamed.payloads
    billed = servers.api.ledger()[0]["cost_usd"]
    assert stats["failures"] == 1 and 0 < stats["cost_usd"] <= billed
    # the client saw 4 tokens' usage; the server may have generated one more it never sent
    assert billed - stats["cost_usd"] <= 20 / 1e6 + 1e-12


# -- the config, and the freshness rule of the health probe ----------------------------------------


def _valid_config() -> dict[str, Any]:
    return {
        "contract": 4,
        "local": {
            "base_url": "http://127.0.0.1:9/v1",
            "model": "m",
            "health_url": "http://127.0.0.1:9/health",
            "health_interval_s": 1.0,
            "timeouts": {"connect_s": 1, "first_byte_s": 2, "total_s": 30},
        },
        "api": {
            "base_url": "http://127.0.0.1:9/v1",
            "model": "o",
            "api_key": "sk",
            "prices": {"input_per_million_usd": 4, "output_per_million_usd": 20},
            "timeouts": {"connect_s": 1, "first_byte_s": 5, "total_s": 60},
        },
    }


def _broken(change: Callable[[dict[str, Any]], None]) -> str:
    config = _valid_config()
    change(config)
    return yaml.safe_dump(config)


CONFIG_ERRORS = {
    "missing field": (_broken(lambda c: c["local"].pop("model")), "local.model"),
    "unknown key": (_broken(lambda c: c["api"].update(retries=3)), "retries"),
    "negative timeout": (
        _broken(lambda c: c["local"]["timeouts"].update(first_byte_s=-1)),
        "local.timeouts.first_byte_s",
    ),
    "missing prices": (_broken(lambda c: c["api"].pop("prices")), "api.prices"),
    "missing timeout": (_broken(lambda c: c["api"]["timeouts"].pop("total_s")), "api.timeouts.total_s"),
    "string for a number": (_broken(lambda c: c["local"].update(health_interval_s="1s")), "local.health_interval_s"),
    "not a URL": (_broken(lambda c: c["api"].update(base_url="localhost:8100")), "api.base_url"),
    "other contract": (_broken(lambda c: c.update(contract=1)), "contract"),
    "repeated key": ("contract: 4\ncontract: 4\n", "appears twice"),
    "not YAML": ("local: [unclosed\n", "not valid YAML"),
    "not a mapping": ("- a list\n", "must be a mapping"),
}


def test_the_contracts_example_config_is_accepted(tmp_path: Path) -> None:
    """Nothing listens on the example's ports, so the gateway starts with its local route down; /health answers."""
    example = yaml.safe_load((SCHEMA_DIR / "examples" / "gateway-config.yaml").read_text())
    with run_gateway(example, tmp_path) as gateway:
        assert httpx.get(gateway.url + "/health", timeout=5).status_code == 200
        assert gateway.stats()["routes"]["local"]["requests"] == 0


@pytest.mark.parametrize("case", list(CONFIG_ERRORS))
def test_a_bad_config_stops_the_gateway_with_exit_2_and_the_field_named(case: str, tmp_path: Path) -> None:
    text, named = CONFIG_ERRORS[case]
    process, _, err = _start(text, tmp_path)
    assert process.wait(15) == 2
    message = err.read_text()
    assert named in message and "Traceback" not in message and len(message.strip().splitlines()) == 1


def test_a_missing_config_file_or_port_is_exit_2(tmp_path: Path) -> None:
    env = {**os.environ, "PYTHONPATH": str(ROOT / "starter")}
    missing = subprocess.run(
        [sys.executable, *GATEWAY, "--config", str(tmp_path / "none.yaml"), "--port", "0"],
        cwd=REFERENCE,
        capture_output=True,
        text=True,
        env=env,
        timeout=15,
        check=False,
    )
    assert missing.returncode == 2 and "cannot read" in missing.stderr and "Traceback" not in missing.stderr
    no_port = subprocess.run(
        [sys.executable, *GATEWAY, "--config", "x.yaml"],
        cwd=REFERENCE,
        capture_output=True,
        text=True,
        env=env,
        timeout=15,
        check=False,
    )
    assert no_port.returncode == 2 and "--port" in no_port.stderr


def _health_module() -> Any:
    """The gateway's health module, loaded from its file (the gateway is a program, not a package)."""
    spec = importlib.util.spec_from_file_location("reference_gateway_health", REFERENCE / "gateway" / "health.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_a_stale_health_result_is_not_trusted_and_concurrent_askers_share_one_probe() -> None:
    health = _health_module()
    now = [100.0]
    answers = [True, False]
    calls: list[float] = []

    async def probe() -> bool:
        calls.append(now[0])
        await asyncio.sleep(0.01)
        return answers[min(len(calls) - 1, len(answers) - 1)]

    async def scenario() -> None:
        monitor = health.HealthMonitor(probe, interval_s=1.0, probe_timeout_s=0.5, clock=lambda: now[0])
        assert monitor.fresh() is None  # never probed: unknown, not healthy
        assert await monitor.healthy() is True and len(calls) == 1
        now[0] += 2.5  # two periods plus one probe timeout: still fresh
        assert monitor.fresh() is True and await monitor.healthy() is True and len(calls) == 1
        now[0] += 0.01  # now stale: the next asker probes again
        assert monitor.fresh() is None
        results = await asyncio.gather(*(monitor.healthy() for _ in range(5)))
        assert results == [False] * 5 and len(calls) == 2, "five askers, one probe"

    asyncio.run(scenario())
