"""Fuzzing the fake server from its own API description (`GET /openapi.json`) with schemathesis.

Every described operation gets a bounded number of generated requests, valid ones (positive) and
ones that break the description (negative), sent over real HTTP to a real server on loopback.
The server must never answer 5xx, every 4xx must carry an OpenAI-style error body, the answers
must match the description, and afterwards no slot, KV block or in-flight request is left over.
Examples are derandomized, so a run repeats exactly.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
import schemathesis
from hypothesis import HealthCheck, Phase, given, settings
from schemathesis import GenerationMode
from schemathesis.core.result import Ok
from schemathesis.schemas import APIOperation, BaseSchema
from schemathesis.specs.openapi.checks import positive_data_acceptance

from fake_server import RunningServer, serve
from fake_server.http.openapi import describe

pytestmark = pytest.mark.slow

# Bounded: about 8 operations x 2 modes x this many examples, all quick at 100k tokens/s.
EXAMPLES = 25
# What a valid-by-description request may still be refused for: limits the description cannot state.
ALLOWED_400 = (
    "maximum context length",
    "min_tokens must be less than or equal to max_tokens",
    "Stream options can only be defined when `stream=True`",
)
GAUGE = re.compile(
    r"^(vllm:num_requests_running|vllm:num_requests_waiting|vllm:kv_cache_usage_perc)\{[^}]*\} (\S+)$", re.MULTILINE
)


@pytest.fixture(scope="module")
def server() -> Iterator[RunningServer]:
    # Short contexts and a fast token rate keep every generated request's answer short.
    with serve(
        max_model_len=256,
        token_rate=100_000,
        prefill_rate=1e9,
        prefill_overhead=0,
        output_len_min=1,
        output_len_max=8,
        enable_prefix_caching=False,
        seed=3,
    ) as running:
        yield running


@pytest.fixture(scope="module")
def schema(server: RunningServer) -> BaseSchema:
    loaded = schemathesis.openapi.from_url(server.base_url + "/openapi.json")
    loaded.config.update(base_url=server.base_url)
    return loaded


def _gauges(server: RunningServer) -> dict[str, float]:
    text = httpx.get(server.base_url + "/metrics", timeout=10, trust_env=False).text
    return {name: float(value) for name, value in GAUGE.findall(text)}


def test_the_description_is_served_and_names_every_real_endpoint(server: RunningServer) -> None:
    served = httpx.get(server.base_url + "/openapi.json", timeout=10, trust_env=False)
    assert served.status_code == 200
    doc = served.json()
    assert doc == describe()
    for path, methods in doc["paths"].items():
        for method in methods:
            reply = httpx.request(
                method.upper(),
                server.base_url + path,
                timeout=10,
                trust_env=False,
                json={} if method == "post" else None,
            )
            assert reply.status_code != 404 or "does not exist" in reply.text, (
                f"{method.upper()} {path} is described but not served"
            )
    # and a path it does not describe is not served
    assert httpx.get(server.base_url + "/v1/embeddings", timeout=10, trust_env=False).status_code == 404


# An operation of the fake server's schema, as BaseSchema.get_all_operations yields it (its parameters untyped).
Operation = APIOperation[Any, Any, Any, Any]


def _fuzz(server: RunningServer, operation: Operation, mode: GenerationMode, seen: dict[str, set[int]]) -> None:
    """EXAMPLES generated requests to one operation, each answer checked."""
    label = operation.label

    @settings(
        max_examples=EXAMPLES,
        deadline=None,
        database=None,
        derandomize=True,
        phases=[Phase.explicit, Phase.generate],
        suppress_health_check=list(HealthCheck),
    )
    @given(case=operation.as_strategy(generation_mode=mode))
    def fuzz(case: schemathesis.Case[Operation]) -> None:
        response = case.call(base_url=server.base_url, timeout=30)
        seen.setdefault(label, set()).add(response.status_code)
        assert response.status_code < 500, f"{label}: {response.status_code} for {case.body!r}: {response.text[:300]}"
        if response.status_code >= 400:
            body = response.json()
            error = body.get("error") if isinstance(body, dict) else None
            assert isinstance(error, dict) and isinstance(error.get("message"), str) and error["message"], (
                f"{label}: {response.status_code} without an OpenAI error body: {response.text[:300]}"
            )
            assert error.get("code") == response.status_code
        if mode is GenerationMode.POSITIVE:
            if response.status_code == 400:
                assert any(why in response.text for why in ALLOWED_400), (
                    f"{label}: valid request refused: {response.text[:300]}"
                )
            # status, content type and body against the description
            case.validate_response(response, excluded_checks=[positive_data_acceptance])

    fuzz()


def _assert_nothing_left(server: RunningServer) -> None:
    """Slots, queue and KV blocks all free, and every request the ledger saw has ended: with a
    finish reason, or refused with its error."""
    records = server.ledger(settle=10)
    assert records, "the fuzzing sent no generation request"
    unended = [
        r
        for r in records
        if r.get("finished") is None
        or not (r["finish_reason"] if r["status"] == 200 else r["status"] >= 400 and r["error"])
    ]
    assert not unended, unended[:3]
    assert _gauges(server) == {
        "vllm:num_requests_running": 0.0,
        "vllm:num_requests_waiting": 0.0,
        "vllm:kv_cache_usage_perc": 0.0,
    }


@pytest.mark.parametrize("mode", [GenerationMode.POSITIVE, GenerationMode.NEGATIVE], ids=["valid", "invalid"])
def test_fuzzed_requests_get_no_5xx_openai_error_bodies_and_leak_nothing(
    server: RunningServer, schema: BaseSchema, mode: GenerationMode
) -> None:
    server.reset()  # a fresh ledger generation for this mode
    seen: dict[str, set[int]] = {}
    for result in schema.get_all_operations():
        assert isinstance(result, Ok), result  # the fake server's schema has no operation schemathesis cannot read
        operation = result.ok()
        if mode is GenerationMode.NEGATIVE and operation.method.upper() != "POST":
            continue  # nothing to break in a GET without parameters
        _fuzz(server, operation, mode, seen)
    assert set(seen) >= {"POST /v1/chat/completions", "POST /v1/completions", "POST /tokenize"}
    if mode is GenerationMode.NEGATIVE:  # invalid input was really sent and really refused
        assert 400 in seen["POST /v1/chat/completions"] and 400 in seen["POST /v1/completions"]
    else:  # and valid input really generated
        assert 200 in seen["POST /v1/chat/completions"] and 200 in seen["POST /v1/completions"]
    _assert_nothing_left(server)
