"""Run the candidate's gateway once, between a local and an API fake server, through every case.

The gateway is started once per section with one config; the two fake servers live for the whole
section in the sandbox's harness. Before each case the grader resets both servers (a new ledger
generation, no faults, start-up settings) and sets that case's faults and settings through the
harness, never through anything the candidate can reach. Each case sends its request(s), and
keeps the answers, both ledgers and `/stats` before and after. Nothing here judges: the checks in
`gateway.py` do. The cases run in a fixed order; the local server is stopped only for the last
ones (a refused connection), since a stopped server cannot come back on the port the config names.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass, field
from typing import Any, Protocol

from grader.contract import Submission

__all__ = ["CASES", "CONFIG", "Case", "CaseRun", "GatewayRun", "Send", "run_gateway", "serving_route"]

PORT = 18080                    # inside the sandbox's own network namespace, below the ephemeral range
LOCAL_MODEL, API_MODEL, CLIENT_MODEL = "qwen-local", "opus-api", "model-the-client-asked-for"
API_KEY = "sk-grader-gateway"
PRICE_IN, PRICE_OUT = 4.0, 20.0  # USD per million tokens, the same in the config and the API server
MAX_MODEL_LEN = 256
STALL_S = 2.5                   # a stall lasts >= 5x the first-byte timeout it must trip
START_TIMEOUT_S = 20.0

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


class Box(Protocol):
    def serve(self, name: str, **settings: Any) -> dict[str, Any]: ...
    def configure(self, name: str, **settings: Any) -> None: ...
    def set_faults(self, name: str, faults: list[dict[str, Any]]) -> None: ...
    def reset(self, name: str) -> None: ...
    def stop_server(self, name: str) -> None: ...
    def ledger(self, name: str, settle: float = ...) -> list[dict[str, Any]]: ...
    def health_checks(self, name: str, since: float = ...) -> list[dict[str, Any]]: ...
    def spawn(self, argv: list[str], *, timeout_s: float = ...) -> str: ...
    def stop(self, handle: str) -> Any: ...
    def wait_port(self, port: int, timeout_s: float = ...) -> bool: ...
    def http(self, method: str, url: str, *, json: Any = ..., stream: bool = ..., timeout_s: float = ...) -> dict[str, Any]: ...
    def http_many(self, requests: list[dict[str, Any]], *, timeout_s: float = ...) -> list[dict[str, Any]]: ...
    def write_file(self, name: str, text: str) -> str: ...


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

    @property
    def stall(self) -> bool:
        return any("stall" in f["kind"] for f in self.local_faults + self.api_faults)


def _error(status: int, message: str | None = None, **extra: Any) -> dict[str, Any]:
    return {"kind": "http_error", "status": status, **({"message": message} if message else {}), **extra}


_STALL_BEFORE = {"kind": "stall_before_headers", "seconds": STALL_S}
_STALL_AFTER = {"kind": "stall_after_headers", "seconds": STALL_S}
_UNHEALTHY = {"kind": "unhealthy"}
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
         (_UNHEALTHY, _STALL_BEFORE), send=Send(require="local"), wait_probe=True),
    Case("rl-unhealthy", "require: local; /health answers 503 (the probe has seen it)", (_UNHEALTHY,),
         send=Send(require="local"), wait_probe=True),
    Case("rl-health-stale", "require: local; after 1 s of healthy traffic /health turns 503", (_UNHEALTHY,),
         send=Send(require="local"), wait_probe=True, warm_s=1.0),
    Case("unhealthy-any", "/health answers 503 (the probe has seen it); require: any", (_UNHEALTHY,), wait_probe=True),
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
    Case("refused", "the local server is stopped (connection refused)", stop_local=True),
    Case("refused-stream", "the local server is stopped; streamed", send=Send(stream=True), stop_local=True),
    # The probe has seen the stopped server: whether a gateway skips a route it knows is down or
    # tries it, the answer must be 503 and nothing may reach the API. Waiting makes the case one
    # state, not a race between the probe and the request.
    Case("rl-refused", "require: local; the local server is stopped (the probe has seen it)", send=Send(require="local"),
         stop_local=True, wait_probe=True),
)


@dataclass
class CaseRun:
    case: Case
    t0: float                                        # Unix time the case's first request was sent
    sent: list[dict[str, Any]] = field(default_factory=list)
    answers: list[dict[str, Any]] = field(default_factory=list)  # netops answers (+ "sent_at", "done_at")
    local: list[dict[str, Any]] = field(default_factory=list)    # ledger records
    api: list[dict[str, Any]] = field(default_factory=list)
    stats_before: Any = None
    stats_after: Any = None
    local_stopped: bool = False
    extra: dict[str, Any] = field(default_factory=dict)
    problem: str = ""                                # the grader could not run the case (never the candidate's fault)


@dataclass
class GatewayRun:
    argv: list[str]
    started: bool
    start_problem: str
    cases: dict[str, CaseRun]
    wall_s: float                                    # the time the gateway ran
    inherent_s: float                                # sum of the cases' own durations (stalls, streams, waits)
    stdout_tail: str = ""
    stderr_tail: str = ""

    @property
    def logs(self) -> str:
        out = f"$ {' '.join(self.argv)}"
        if self.stdout_tail.strip():
            out += f"\n--- stdout (tail) ---\n{self.stdout_tail[-3000:]}"
        if self.stderr_tail.strip():
            out += f"\n--- stderr (tail) ---\n{self.stderr_tail[-3000:]}"
        return out


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


def serving_route(run: CaseRun) -> str | None:
    """For a one-request case: the route whose ledger shows the answer the client got, or None."""
    if run.api:
        return "api"
    if run.local:
        return "local"
    return None


class _Session:
    def __init__(self, box: Box, local_name: str, api_name: str) -> None:
        self.box = box
        self.local_name, self.api_name = local_name, api_name
        self.url = f"http://127.0.0.1:{PORT}"
        self.local_stopped = False
        self.local_url = ""
        self.was_unhealthy = False  # the last case made /health answer 503
        self.started_at = time.time()

    def stats(self) -> Any:
        answer = self.box.http("GET", self.url + "/stats", timeout_s=5.0)
        if answer["status"] is None:  # a busy machine: one more try before calling it missing
            time.sleep(0.2)
            answer = self.box.http("GET", self.url + "/stats", timeout_s=5.0)
        try:
            return json.loads(answer["body"]) if answer["status"] == 200 else {"_status": answer["status"]}
        except (json.JSONDecodeError, TypeError):
            return {"_status": answer["status"], "_body": (answer.get("body") or "")[:200], "_error": answer.get("error")}

    def prepare(self, case: Case, run: CaseRun) -> None:
        if case.stop_local and not self.local_stopped:
            self.box.stop_server(self.local_name)
            self.local_stopped = True
        if not self.local_stopped:
            healthy_at = time.time()
            self.box.reset(self.local_name)
            if case.local_settings:
                self.box.configure(self.local_name, **case.local_settings)
            if self.was_unhealthy:
                # Let the probe see /health healthy again, so this case does not start in the
                # last one's health state: one state, not a race between probe and request.
                time.sleep(HEALTH_NOTICE_S)
                _note_unseen(run, _probe_unseen(self, healthy_at, status=200))
        self.was_unhealthy = any(f.get("kind") == "unhealthy" for f in case.local_faults)
        self.box.reset(self.api_name)
        if case.api_settings:
            self.box.configure(self.api_name, **case.api_settings)

    def ledgers(self, run: CaseRun, settle: float) -> None:
        if not self.local_stopped:
            run.local = self.box.ledger(self.local_name, settle=settle)
        run.api = self.box.ledger(self.api_name, settle=settle)

    def send(self, body: dict[str, Any], *, timeout_s: float = 20.0) -> dict[str, Any]:
        sent_at = time.time()
        answer = self.box.http("POST", self.url + "/v1/chat/completions", json=body, stream=bool(body.get("stream")),
                               timeout_s=timeout_s)
        answer["sent_at"], answer["done_at"] = sent_at, time.time()
        return answer


def _tokens(session: _Session, body: dict[str, Any]) -> int | None:
    answer = session.box.http("POST", session.local_url + "/tokenize",
                              json={"model": LOCAL_MODEL, "messages": body["messages"]}, timeout_s=5.0)
    try:
        count = json.loads(answer["body"]).get("count")
    except (json.JSONDecodeError, AttributeError, TypeError):
        return None
    return count if isinstance(count, int) else None


def _run_one(session: _Session, case: Case, run: CaseRun) -> None:
    box = session.box
    body = body_for(case, case.send)
    if case.send.fit is not None:
        count = _tokens(session, body)
        if count is None:
            run.problem = "the local server's /tokenize gave no count"
            return
        body["max_tokens"] = MAX_MODEL_LEN - count + (1 if case.send.fit == "over" else 0)
        run.extra["prompt_tokens"] = count
    if case.warm_s:
        until = time.monotonic() + case.warm_s
        warm = body_for(case, Send(max_tokens=2))
        durations = run.extra.setdefault("warm_durations", [])
        while time.monotonic() < until:
            answer = session.send(warm)
            if answer["status"] == 200:
                durations.append(answer["done_at"] - answer["sent_at"])
            time.sleep(0.05)
        # kept apart, not this case's: the first ones may go to the API while the last case's "unhealthy" is fresh
        run.extra["warm_local"] = box.ledger(session.local_name, settle=2.0)
        run.extra["warm_api"] = box.ledger(session.api_name, settle=2.0)
        box.reset(session.local_name)
        box.reset(session.api_name)
        run.stats_before = session.stats()
    faults_at = time.time()
    box.set_faults(session.local_name, list(case.local_faults)) if not session.local_stopped else None
    box.set_faults(session.api_name, list(case.api_faults))
    if case.wait_probe:
        time.sleep(HEALTH_NOTICE_S)
        if not session.local_stopped and any(f.get("kind") == "unhealthy" for f in case.local_faults):
            _note_unseen(run, _probe_unseen(session, faults_at, status=503))
    run.t0 = time.time()
    run.sent.append(body)
    run.answers.append(session.send(body))


def _note_unseen(run: CaseRun, why: str | None) -> None:
    """Keep why a premise of this case never held (judge_cases makes its answer borderline)."""
    if why:
        run.extra["unseen"] = "; ".join(filter(None, (run.extra.get("unseen"), why)))


def _probe_unseen(session: _Session, since: float, *, status: int) -> str | None:
    """Why the case's premise, "the probe has seen /health answer `status`", may not hold; None if it does.

    A gateway that never asks /health is judged by the case as it is. One that probes, but did not
    ask in the HEALTH_NOTICE_S since /health turned to `status`, was starved by a busy machine (or
    probes slower than health_interval_s): the case cannot tell right from wrong then."""
    if any(c.get("status") == status for c in session.box.health_checks(session.local_name, since=since)):
        return None
    checks = session.box.health_checks(session.local_name, since=session.started_at)  # only on this rare path
    if not checks:
        return None
    last = max(float(c.get("at", 0.0)) for c in checks)
    state = "healthy again" if status == 200 else f"{status}"
    return (f"the gateway's probe did not ask /health in the {HEALTH_NOTICE_S:g} s after it turned {state} (its "
            f"last probe was {time.time() - last:.2f} s before the request), so the case's premise never held")


def _run_require_bad(session: _Session, case: Case, run: CaseRun) -> None:
    run.t0 = time.time()
    for value in ("remote", 5):
        body = body_for(case, Send(require=value))
        run.sent.append(body)
        run.answers.append(session.send(body))


def _run_recover(session: _Session, case: Case, run: CaseRun) -> None:
    """Unhealthy until the probe has seen it, then healthy: how long until require: local is served?"""
    box = session.box
    box.set_faults(session.local_name, [_UNHEALTHY])
    time.sleep(HEALTH_NOTICE_S)
    run.stats_before = session.stats()
    box.set_faults(session.local_name, [])
    run.t0 = time.time()
    deadline = run.t0 + 4 * HEALTH_NOTICE_S
    body = body_for(case, Send(require="local", max_tokens=2))
    while time.time() < deadline:
        answer = session.send(body, timeout_s=5.0)
        run.sent.append(body)
        run.answers.append(answer)
        if answer["status"] == 200:
            run.extra["recovered_after_s"] = answer["sent_at"] - run.t0
            break
        time.sleep(0.05)


def _run_concurrent(session: _Session, case: Case, run: CaseRun) -> None:
    """32 streams at once through the gateway; then the same 32 sent straight to the local server."""
    bodies = [body_for(Case(f"{case.name}-{i:02d}", ""), Send(stream=True, max_tokens=16, words=4 + i % 7))
              for i in range(32)]
    run.t0 = time.time()
    requests = [{"method": "POST", "url": session.url + "/v1/chat/completions", "json": b, "stream": True}
                for b in bodies]
    run.sent = bodies
    run.answers = session.box.http_many(requests, timeout_s=30.0)
    session.ledgers(run, settle=5.0)
    run.stats_after = session.stats()
    session.box.reset(session.local_name)
    direct = [{"method": "POST", "url": session.local_url + "/v1/chat/completions", "stream": True,
               "json": {**{k: v for k, v in b.items()}, "model": LOCAL_MODEL}} for b in bodies]
    run.extra["direct"] = session.box.http_many(direct, timeout_s=30.0)
    session.box.reset(session.local_name)


def run_gateway(box: Box, submission: Submission, *, seed: int, cases: tuple[Case, ...] = CASES) -> GatewayRun:
    """Start both servers and the gateway, run `cases` in order, stop everything; never raises for the candidate."""
    local_name, api_name = "gateway-local", "gateway-api"
    local = box.serve(local_name, **{**LOCAL_SERVER, "seed": seed})
    api = box.serve(api_name, **{**API_SERVER, "seed": seed + 1})
    config = json.loads(json.dumps(CONFIG))
    config["local"].update(base_url=local["base_url"], health_url=local["url"] + "/health")
    config["api"]["base_url"] = api["base_url"]
    path = box.write_file("grader-gateway-config.yaml", json.dumps(config, indent=2) + "\n")  # JSON is YAML
    argv = submission.command("gateway") + ["--config", path, "--port", str(PORT)]
    session = _Session(box, local_name, api_name)
    session.local_url = local["url"]
    started = time.perf_counter()
    handle = box.spawn(argv, timeout_s=600.0)
    runs: dict[str, CaseRun] = {}
    inherent = 0.0
    start_problem = ""
    try:
        if not box.wait_port(PORT, timeout_s=START_TIMEOUT_S):
            start_problem = f"nothing listened on 127.0.0.1:{PORT} within {START_TIMEOUT_S:g} s of the start"
        else:
            health = box.http("GET", session.url + "/health", timeout_s=5.0)
            if health["status"] != 200:
                time.sleep(1.0)  # it may still be starting its lifespan
            for case in cases:
                case_started = time.perf_counter()
                run = CaseRun(case, t0=time.time())
                try:
                    runs[case.name] = _run_case(session, case, run)
                except Exception as exc:  # noqa: BLE001 - a sandbox error ends this case, and is reported
                    run.problem = f"the grader could not run this case: {type(exc).__name__}: {exc}"
                    runs[case.name] = run
                inherent += _inherent(case, run, time.perf_counter() - case_started)
    finally:
        result = box.stop(handle)
        if not session.local_stopped:
            box.stop_server(local_name)
        box.stop_server(api_name)
    return GatewayRun(argv, not start_problem, start_problem, runs, time.perf_counter() - started, inherent,
                      getattr(result, "stdout_tail", ""), getattr(result, "stderr_tail", ""))


def _run_case(session: _Session, case: Case, run: CaseRun) -> CaseRun:
    if case.kind == "startup":
        run.answers.append(session.box.http("GET", session.url + "/health", timeout_s=5.0))
        run.stats_after = session.stats()
        return run
    session.prepare(case, run)
    run.local_stopped = session.local_stopped
    run.stats_before = session.stats()
    if case.kind == "concurrent":
        _run_concurrent(session, case, run)
        return run
    if case.kind == "recover":
        _run_recover(session, case, run)
    elif case.kind == "require-bad":
        _run_require_bad(session, case, run)
    else:
        _run_one(session, case, run)
    # a stalled request ends on the server after its stall; a streamed one when its stream ends
    session.ledgers(run, settle=STALL_S + 1.0 if case.stall else 3.0)
    run.stats_after = session.stats()
    return run


def _inherent(case: Case, run: CaseRun, took: float) -> float:
    """What no grader could save: waits the case needs, stalls it must outlast, streams it must read."""
    if case.kind == "startup":
        return 0.0
    floor = case.warm_s + (HEALTH_NOTICE_S if case.wait_probe else 0.0)
    if case.stall:
        floor += STALL_S
    if case.kind == "recover":
        floor += HEALTH_NOTICE_S + run.extra.get("recovered_after_s", 0.0)
    if run.answers:
        floor += max((a.get("done_at", 0.0) - a.get("sent_at", 0.0)) for a in run.answers) if case.kind == "one" else 0.0
    return min(took, floor)
