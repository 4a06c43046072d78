"""The gateway section's cases: the config the gateway is started with, both fake servers'
settings, and each case's faults and request.

What a case *is* lives here; how a case runs is gateway_run.py, how it is judged gateway.py. The
order of CASES is the order they run in (the last, `quiet_probe` ones each in a start of the
gateway of its own): the local server is stopped only for the last ones, since a stopped server cannot come
back on the port the config names.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

__all__ = ["CASES", "CONFIG", "Case", "Send", "body_for"]

PORT = 18080                    # inside the sandbox's own network namespace, below the ephemeral range
LOCAL_MODEL, API_MODEL, CLIENT_MODEL = "qwen-local", "opus-api", "model-the-client-asked-for"
API_KEY = "sk-grader-gateway"
PRICE_IN, PRICE_OUT = 4.0, 20.0  # USD per million tokens, the same in the config and the API server
MAX_MODEL_LEN = 256
STALL_S = 2.5                   # a stall lasts >= 5x the first-byte timeout it must trip
START_TIMEOUT_S = 20.0
QUIET_INTERVAL_S = 60.0         # the probe interval of the refused-connection session: no probe during it

CONFIG: dict[str, Any] = {
    "contract": 1,
    "local": {"base_url": "", "model": LOCAL_MODEL, "health_url": "", "health_interval_s": 0.25,
              "timeouts": {"connect_s": 0.5, "first_byte_s": 0.5, "total_s": 10.0}},
    "api": {"base_url": "", "model": API_MODEL, "api_key": API_KEY,
            "prices": {"input_per_million_usd": PRICE_IN, "output_per_million_usd": PRICE_OUT},
            "timeouts": {"connect_s": 0.5, "first_byte_s": 0.5, "total_s": 10.0}},
}
HEALTH_INTERVAL_S = CONFIG["local"]["health_interval_s"]
PROBE_TIMEOUT_S = CONFIG["local"]["timeouts"]["first_byte_s"]
# A probe result may be this old before traffic must follow it: one period, one probe's timeout, a margin.
HEALTH_NOTICE_S = HEALTH_INTERVAL_S + PROBE_TIMEOUT_S + 0.5
# A fake server whose steps ran this late could not keep the gateway's time either: half the
# tightest gateway timeout (first_byte_s), a quarter of the stall a fallback must outlast.
BUSY_LAG_S = PROBE_TIMEOUT_S / 2

LOCAL_SERVER = {"served_model_name": [LOCAL_MODEL], "max_num_seqs": 64, "token_rate": 400, "prefill_overhead": 0.0,
                "max_model_len": MAX_MODEL_LEN, "output_len_min": 48, "output_len_max": 48}
API_SERVER = {"persona": "api", "served_model_name": [API_MODEL], "api_key": API_KEY, "price_input": PRICE_IN,
              "price_output": PRICE_OUT, "max_num_seqs": 64, "token_rate": 400, "prefill_overhead": 0.0,
              "output_len_min": 48, "output_len_max": 48}


@dataclass(frozen=True)
class Send:
    """One chat request to the gateway."""

    require: Any = None          # None: no `require` field
    stream: bool = False
    max_tokens: int = 8
    words: int = 6               # prompt length, in words of one token
    fit: str | None = None       # "exact" | "over": max_tokens set from the local /tokenize count


@dataclass(frozen=True)
class Case:
    name: str
    what: str                                    # one line for the report
    local_faults: tuple[dict[str, Any], ...] = ()
    api_faults: tuple[dict[str, Any], ...] = ()
    local_settings: dict[str, Any] = field(default_factory=dict)
    api_settings: dict[str, Any] = field(default_factory=dict)
    send: Send = Send()
    wait_probe: bool = False     # let the probe see the faults (HEALTH_NOTICE_S) before sending
    warm_s: float = 0.0          # healthy traffic for this long first (so a cached "healthy" is old)
    kind: str = "one"            # one | recover | concurrent | startup
    stop_local: bool = False     # the local server is stopped before this case (and stays stopped)
    quiet_probe: bool = False    # run in a start of its own, whose probe has not seen the local server stop

    @property
    def stall(self) -> bool:
        return any("stall" in f["kind"] for f in self.local_faults + self.api_faults)


def _error(status: int, message: str | None = None, **extra: Any) -> dict[str, Any]:
    return {"kind": "http_error", "status": status, **({"message": message} if message else {}), **extra}


_STALL_BEFORE = {"kind": "stall_before_headers", "seconds": STALL_S}
_STALL_AFTER = {"kind": "stall_after_headers", "seconds": STALL_S}
UNHEALTHY = {"kind": "unhealthy"}
_SLOW = {"token_rate": 30}
_LONG_WORDS = MAX_MODEL_LEN + 40

CASES: tuple[Case, ...] = (
    Case("startup", "the gateway starts; GET /health and GET /stats", kind="startup"),
    Case("local-ok", "a healthy local route, non-streamed"),
    Case("local-ok-stream", "a healthy local route, streamed", send=Send(stream=True)),
    Case("local-500", "the local route answers 500", (_error(500),)),
    Case("local-502-stream", "the local route answers 502 to a streamed request", (_error(502),), send=Send(stream=True)),
    Case("local-503", "the local route answers 503", (_error(503, retry_after=1),)),
    Case("local-stall-before-headers", f"the local route sends nothing for {STALL_S:g} s (first_byte_s 0.5)",
         (_STALL_BEFORE,)),
    Case("local-stall-after-headers", f"the local route sends 200 and headers, then nothing for {STALL_S:g} s",
         (_STALL_AFTER,), send=Send(stream=True)),
    Case("local-400", "the local route answers 400", (_error(400, "grader: bad request marker 400"),)),
    Case("local-404", "the local route answers 404", (_error(404, "grader: The model `x` does not exist (404)."),)),
    Case("local-404-stream", "the local route answers 404 to a streamed request",
         (_error(404, "grader: The model `y` does not exist (404 stream)."),), send=Send(stream=True)),
    Case("local-429", "the local route answers 429 with Retry-After", (_error(429, "grader: slow down (429)", retry_after=2),)),
    Case("local-cut", "the local stream is cut after 3 tokens", ({"kind": "cut", "after_tokens": 3},), send=Send(stream=True)),
    Case("local-stream-error", "the local stream sends an error event after 3 tokens, then [DONE]",
         ({"kind": "stream_error", "after_tokens": 3},), send=Send(stream=True)),
    Case("local-no-done", "the local stream ends cleanly after 3 tokens without [DONE]",
         ({"kind": "no_done", "after_tokens": 3},), send=Send(stream=True)),
    Case("api-cut", "the local route answers 503; the API stream is cut after 3 tokens",
         (_error(503),), ({"kind": "cut", "after_tokens": 3},), send=Send(stream=True)),
    Case("require-bad", 'require: "remote" and require: 5 are refused with 400', kind="require-bad"),
    Case("rl-500", "require: local; the local route answers 500", (_error(500),), send=Send(require="local")),
    Case("rl-stall", f"require: local; the local route stalls {STALL_S:g} s before headers", (_STALL_BEFORE,),
         send=Send(require="local")),
    Case("rl-stall-stream", f"require: local; the local stream stalls {STALL_S:g} s after headers", (_STALL_AFTER,),
         send=Send(require="local", stream=True)),
    Case("rl-404", "require: local; the local route answers 404",
         (_error(404, "grader: The model `z` does not exist (require local)."),), send=Send(require="local")),
    Case("rl-too-long", f"require: local; prompt + max_tokens over max_model_len {MAX_MODEL_LEN}",
         send=Send(require="local", words=_LONG_WORDS)),
    Case("rl-unhealthy-stall", "require: local; /health answers 503 (the probe has seen it) and the route stalls",
         (UNHEALTHY, _STALL_BEFORE), send=Send(require="local"), wait_probe=True),
    Case("rl-unhealthy", "require: local; /health answers 503 (the probe has seen it)", (UNHEALTHY,),
         send=Send(require="local"), wait_probe=True),
    Case("rl-health-stale", "require: local; after 1 s of healthy traffic /health turns 503", (UNHEALTHY,),
         send=Send(require="local"), wait_probe=True, warm_s=1.0),
    Case("unhealthy-any", "/health answers 503 (the probe has seen it); require: any", (UNHEALTHY,), wait_probe=True),
    Case("recover", "/health is healthy again: polled with require: local until the local route serves",
         kind="recover"),
    Case("too-long-any", f"a prompt over max_model_len {MAX_MODEL_LEN}; require: any", send=Send(words=_LONG_WORDS)),
    Case("fit-exact", "prompt + max_tokens == max_model_len: it fits", send=Send(fit="exact")),
    Case("fit-over-by-one", "prompt + max_tokens == max_model_len + 1: too long", send=Send(fit="over")),
    Case("all-500", "local 500, API 500", (_error(500),), (_error(500),)),
    Case("local-500-api-stall", f"local 500, the API stalls {STALL_S:g} s (its first_byte_s 0.5)",
         (_error(500),), (_STALL_BEFORE,)),
    Case("local-stall-api-500", "the local route stalls, the API answers 500", (_STALL_BEFORE,), (_error(500),)),
    Case("slow-local-stream", "a local stream of 30 tokens at 30 tokens/s", local_settings=_SLOW,
         send=Send(stream=True, max_tokens=30)),
    Case("slow-api-stream", "local 503; an API stream of 30 tokens at 30 tokens/s", (_error(503),), api_settings=_SLOW,
         send=Send(stream=True, max_tokens=30)),
    Case("concurrent", "32 concurrent streams of 16 tokens through the gateway", kind="concurrent"),
    # The probe has seen the stopped server: whether a gateway skips a route it knows is down or
    # tries it, the answer must be 503 and nothing may reach the API. Waiting makes the case one
    # state, not a race between the probe and the request.
    Case("rl-refused", "require: local; the local server is stopped (the probe has seen it)", send=Send(require="local"),
         stop_local=True, wait_probe=True),
    # Each in a start of its own (probe every QUIET_INTERVAL_S): the gateway must try the route, be refused, fall back.
    Case("refused", "the local server is stopped, its probe has not seen it (connection refused)",
         stop_local=True, quiet_probe=True),
    Case("refused-stream", "the local server is stopped, its probe has not seen it; streamed", send=Send(stream=True),
         stop_local=True, quiet_probe=True),
)


def body_for(case: Case, send: Send, *, max_tokens: int | None = None) -> dict[str, Any]:
    """The chat request a case sends: a prompt naming the case, so each is its own text."""
    words = " ".join(f"w{i}" for i in range(send.words))
    body: dict[str, Any] = {"model": CLIENT_MODEL, "max_tokens": max_tokens if max_tokens is not None else send.max_tokens,
                            "messages": [{"role": "user", "content": f"case {case.name} {words}"}]}
    if send.stream:
        body["stream"] = True
        body["stream_options"] = {"include_usage": True}
    if send.require is not None:
        body["require"] = send.require
    return body
