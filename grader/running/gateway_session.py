"""One start of the candidate's gateway, driven through cases: what the grader sends and keeps per case.

Before each case the grader resets both fake servers (a new ledger generation, no faults, start-up
settings) and sets that case's faults and settings through the sandbox's harness, never through
anything the candidate can reach. Each case sends its request(s), and keeps the answers, both
ledgers and `/stats` before and after (a `CaseRun`). Waits are the contract's: /health turning 503
is given the plan's `notice_s` (health_interval_s + first_byte_s + 0.5 s) to be seen by the
gateway's probe, turning healthy again its `recovery_s` (health_interval_s + 0.5 s), and whether the
probe did see it is kept with the case. Nothing here judges: the checks in criteria/gateway/ do.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass
from typing import Any

from grader.records.gateway import CaseRun, timed_out
from grader.rubric.gateway_plan import UNHEALTHY, Case, GatewayPlan, Send, body_for
from grader.sandbox.box_api import Box

__all__ = ["HangBudget", "Session", "await_first_probe", "inherent_s", "run_case"]


@dataclass
class HangBudget:
    """How long the grader waits for one answer, and how much waiting on a gateway that does not answer a
    section allows before it runs no more cases (the rubric's `limits.gateway`)."""

    request_s: float
    budget_s: float
    spent_s: float = 0.0

    def note(self, answer: dict[str, Any], took_s: float) -> None:
        """Count the wait on an answer that never came."""
        if timed_out(answer):
            self.spent_s += took_s

    @property
    def spent(self) -> str | None:
        """Why no more cases run, or None."""
        if self.spent_s < self.budget_s:
            return None
        return (
            f"not run: the gateway section's {self.budget_s:g} s for requests that are never answered were spent "
            f"({self.spent_s:.0f} s waiting on a gateway that did not answer)"
        )


class Session:
    """One start of the gateway as the grader drives it: the two fake servers by name, the hang budget, and
    what the last case left behind (the local server stopped, /health answering 503)."""

    def __init__(self, box: Box, plan: GatewayPlan, local_name: str, api_name: str, hang: HangBudget) -> None:
        self.box, self.plan, self.hang = box, plan, hang
        self.local_name, self.api_name = local_name, api_name
        self.url = f"http://127.0.0.1:{plan.port}"
        self.local_stopped = False
        self.local_url = ""
        self.was_unhealthy = False  # the last case made /health answer 503
        self.started_at = time.time()

    def get(self, path: str) -> dict[str, Any]:
        """A GET of the grader's own (/health, /stats), waited for at most request_s like every request."""
        sent_at = time.time()
        answer = self.box.http("GET", self.url + path, timeout_s=self.hang.request_s)
        answer["sent_at"], answer["done_at"] = sent_at, time.time()
        self.hang.note(answer, answer["done_at"] - sent_at)
        return answer

    def stats(self) -> Any:
        answer = self.get("/stats")
        if answer["status"] is None and not timed_out(answer):  # not answering yet: one more try
            time.sleep(0.2)
            answer = self.get("/stats")
        try:
            return json.loads(answer["body"]) if answer["status"] == 200 else {"_status": answer["status"]}
        except (json.JSONDecodeError, TypeError):
            return {
                "_status": answer["status"],
                "_body": (answer.get("body") or "")[:200],
                "_error": answer.get("error"),
            }

    def prepare(self, case: Case, run: CaseRun) -> None:
        if case.stop_local and not self.local_stopped:
            self.box.stop_server(self.local_name)
            self.local_stopped = True
            if case.hold_local:  # its port now hangs every connect, as a host gone silent does
                self.box.hold_port(int(self.local_url.rsplit(":", 1)[1]))
        if not self.local_stopped:
            healthy_at = time.time()
            self.box.reset(self.local_name)
            if case.local_settings:
                self.box.configure(self.local_name, **case.local_settings)
            if self.was_unhealthy:
                # Let the probe see /health healthy again, so this case does not start in the last
                # one's health state: one state, not a race between probe and request. The contract
                # has the route used again within recovery_s of turning healthy.
                time.sleep(self.plan.recovery_s)
                _note_unseen(run, _probe_unseen(self, healthy_at, status=200))
        self.was_unhealthy = any(f.get("kind") == "unhealthy" for f in case.local_faults)
        self.box.reset(self.api_name)
        if case.api_settings:
            self.box.configure(self.api_name, **case.api_settings)

    def ledgers(self, run: CaseRun, settle: float) -> None:
        if not self.local_stopped:
            run.local = self.box.ledger(self.local_name, settle=settle)
            # when the gateway counted prompts on the local server, in this case
            run.extra["tokenize_calls"] = self.box.endpoint_calls(self.local_name, "tokenize", since=run.t0)
        run.api = self.box.ledger(self.api_name, settle=settle)

    def send(self, body: dict[str, Any]) -> dict[str, Any]:
        """One request to the gateway, waited for at most the rubric's request_s."""
        sent_at = time.time()
        answer = self.box.http(
            "POST",
            self.url + "/v1/chat/completions",
            json=body,
            stream=bool(body.get("stream")),
            timeout_s=self.hang.request_s,
        )
        answer["sent_at"], answer["done_at"] = sent_at, time.time()
        self.hang.note(answer, answer["done_at"] - sent_at)
        return answer


def _tokens(session: Session, body: dict[str, Any]) -> int | None:
    answer = session.box.http(
        "POST",
        session.local_url + "/tokenize",
        json={"model": session.plan.local_model, "messages": body["messages"]},
        timeout_s=5.0,
    )
    try:
        count = json.loads(answer["body"]).get("count")
    except (json.JSONDecodeError, AttributeError, TypeError):
        return None
    return count if isinstance(count, int) else None


def _run_one(session: Session, case: Case, run: CaseRun) -> None:
    box = session.box
    body = body_for(session.plan, case, case.send)
    if case.send.fit is not None:
        count = _tokens(session, body)
        if count is None:
            run.problem = "the local server's /tokenize gave no count"
            return
        body["max_tokens"] = session.plan.max_model_len - count + (1 if case.send.fit == "over" else 0)
        run.extra["prompt_tokens"] = count
    if case.warm_s:
        until = time.monotonic() + case.warm_s
        warm = body_for(session.plan, case, Send(max_tokens=2))
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
        time.sleep(session.plan.notice_s)
        if not session.local_stopped and any(f.get("kind") == "unhealthy" for f in case.local_faults):
            _note_unseen(run, _probe_unseen(session, faults_at, status=503))
    run.t0 = time.time()
    run.sent.append(body)
    run.answers.append(session.send(body))


def _note_unseen(run: CaseRun, why: str | None) -> None:
    """Keep why a premise of this case never held (judge_cases makes its answer borderline)."""
    if why:
        run.extra["unseen"] = "; ".join(filter(None, (run.extra.get("unseen"), why)))


def _probed(session: Session, since: float, status: int) -> bool:
    """Whether the local server's /health answered `status` to anyone after Unix time `since`."""
    return any(c.get("status") == status for c in _health_calls(session, since))


def _health_calls(session: Session, since: float) -> list[dict[str, Any]]:
    return session.box.endpoint_calls(session.local_name, "health", since=since)


def _probe_unseen(session: Session, since: float, *, status: int) -> str | None:
    """Why the case's premise, "the probe has seen /health answer `status`", may not hold; None if it does.

    A gateway that never asks /health is judged by the case as it is. One that probes, but did not
    ask in the wait the contract gives since /health turned to `status`, was starved by a busy machine
    (or probes slower than health_interval_s): the case cannot tell right from wrong then."""
    if _probed(session, since, status):
        return None
    waited = time.time() - since
    checks = _health_calls(session, session.started_at)  # only on this rare path
    if not checks:
        return None
    last = max(float(c.get("at", 0.0)) for c in checks)
    state = "healthy again" if status == 200 else f"{status}"
    return (
        f"the gateway's probe did not ask /health in the {waited:.2f} s after it turned {state} (its "
        f"last probe was {time.time() - last:.2f} s before the request), so the case's premise never held"
    )


#: The `require` values each kind of case sends: require-bad two refused with 400, require-null null, which is
#: `any` (contract 2 says so; contract 1 left it unsaid).
REQUIRE_VALUES: dict[str, tuple[Any, ...]] = {"require-bad": ("remote", 5), "require-null": (None,)}


def _run_require_bad(session: Session, case: Case, run: CaseRun) -> None:
    run.t0 = time.time()
    for value in REQUIRE_VALUES[case.kind]:
        body = body_for(session.plan, case, Send())
        body["require"] = value
        run.sent.append(body)
        run.answers.append(session.send(body))


def _run_recover(session: Session, case: Case, run: CaseRun) -> None:
    """Unhealthy until the probe has seen it, then healthy: how long until require: local is served?"""
    box = session.box
    box.set_faults(session.local_name, [UNHEALTHY])
    time.sleep(session.plan.notice_s)
    run.stats_before = session.stats()
    box.set_faults(session.local_name, [])
    run.t0 = time.time()
    deadline = run.t0 + 4 * session.plan.notice_s
    body = body_for(session.plan, case, Send(require="local", max_tokens=2))
    while time.time() < deadline:
        answer = session.send(body)
        run.sent.append(body)
        run.answers.append(answer)
        if answer["status"] == 200:
            run.extra["recovered_after_s"] = answer["sent_at"] - run.t0
            break
        time.sleep(0.05)


def _run_concurrent(session: Session, case: Case, run: CaseRun) -> None:
    """32 streams at once through the gateway; then the same 32 sent straight to the local server."""
    bodies = [
        body_for(session.plan, Case(f"{case.name}-{i:02d}", ""), Send(stream=True, max_tokens=16, words=4 + i % 7))
        for i in range(32)
    ]
    run.t0 = time.time()
    requests = [
        {"method": "POST", "url": session.url + "/v1/chat/completions", "json": b, "stream": True} for b in bodies
    ]
    run.sent = bodies
    started = time.monotonic()
    run.answers = session.box.http_many(requests, timeout_s=2 * session.hang.request_s)
    if answers_lost := [a for a in run.answers if a.get("status") is None]:
        session.hang.note(answers_lost[0], time.monotonic() - started)
    session.ledgers(run, settle=5.0)
    run.stats_after = session.stats()
    session.box.reset(session.local_name)
    direct = [
        {
            "method": "POST",
            "url": session.local_url + "/v1/chat/completions",
            "stream": True,
            "json": {**b, "model": session.plan.local_model},
        }
        for b in bodies
    ]
    run.extra["direct"] = session.box.http_many(direct, timeout_s=2 * session.hang.request_s)
    session.box.reset(session.local_name)


#: A probe-period case watches this many health intervals (after one to let the last case's traffic settle).
PROBE_PERIODS = 8
#: A `many` case's requests: enough that a route's latency percentiles have n >= 100 (p99 is then not the max).
MANY_REQUESTS = 110
MANY_AT_ONCE = 10


def _run_probe_period(session: Session, case: Case, run: CaseRun) -> None:
    """Nothing is sent: the grader only watches the gateway's probe of /health for PROBE_PERIODS intervals."""
    interval = session.plan.health_interval_s
    time.sleep(interval)
    run.t0 = time.time()
    time.sleep(PROBE_PERIODS * interval)
    run.extra["window"] = [run.t0, time.time()]
    run.extra["health_calls"] = [c["at"] for c in _health_calls(session, run.t0)]


def _run_many(session: Session, case: Case, run: CaseRun) -> None:
    """MANY_REQUESTS short requests, MANY_AT_ONCE at a time, all for the local route: /stats then has n >= 100
    there. Few at once: this counts samples, it is not a load test (the `concurrent` case is one)."""
    run.t0 = time.time()
    bodies = [
        body_for(session.plan, Case(f"{case.name}-{i:03d}", ""), Send(max_tokens=1)) for i in range(MANY_REQUESTS)
    ]
    run.sent = bodies
    started = time.monotonic()
    for first in range(0, MANY_REQUESTS, MANY_AT_ONCE):
        batch = bodies[first : first + MANY_AT_ONCE]
        requests = [{"method": "POST", "url": session.url + "/v1/chat/completions", "json": b} for b in batch]
        run.answers += session.box.http_many(requests, timeout_s=session.hang.request_s)
    if answers_lost := [a for a in run.answers if a.get("status") is None]:
        session.hang.note(answers_lost[0], time.monotonic() - started)


def await_first_probe(session: Session, timeout_s: float = 5.0) -> None:
    """Wait for the gateway's start-up probe to have had its 200 (the contract says to probe at start).

    A gateway that never probes is judged by the cases as it is; so is one that took longer."""
    until = time.monotonic() + timeout_s
    while time.monotonic() < until:
        if _probed(session, session.started_at, 200):
            return
        time.sleep(0.05)


def run_case(session: Session, case: Case, run: CaseRun) -> CaseRun:
    if case.kind == "startup":
        run.answers.append(session.get("/health"))
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
    elif case.kind == "probe-period":
        _run_probe_period(session, case, run)
    elif case.kind == "many":
        _run_many(session, case, run)
    elif case.kind in REQUIRE_VALUES:
        _run_require_bad(session, case, run)
    else:
        _run_one(session, case, run)
    # a stalled request ends on the server when the gateway gives up on it (or after the stall, for one that
    # waits it out); a streamed one when its stream ends
    session.ledgers(run, settle=case.stall_s + 1.0 if case.stall else 3.0)
    run.stats_after = session.stats()
    _late_arrivals(session, run)
    return run


#: How long the grader waits for attempts the gateway counted and a ledger does not show yet.
LATE_S = 5.0


def _late_arrivals(session: Session, run: CaseRun) -> None:
    """Read a ledger again while it shows fewer attempts than the gateway counted in /stats: on a busy machine a
    request the gateway gave up on can reach its fake server after the grader read the ledger (an attempt the
    server never saw is then one it saw late, and says when). Waits at most LATE_S; a gateway that counts
    attempts it never made costs that wait and nothing else."""
    counted = _requests_counted(run.stats_before, run.stats_after)
    deadline = time.monotonic() + LATE_S
    for route, name in (("local", session.local_name), ("api", session.api_name)):
        if route == "local" and session.local_stopped:
            continue
        late = False
        while len(getattr(run, route)) < counted.get(route, 0) and time.monotonic() < deadline:
            late = True
            time.sleep(0.2)
            setattr(run, route, session.box.ledger(name, settle=1.0))
        if late:
            run.extra[f"late_{route}"] = len(getattr(run, route))


def _requests_counted(before: Any, after: Any) -> dict[str, int]:
    """How many attempts each route's `requests` in /stats went up by, where both answers give a number."""
    counted: dict[str, int] = {}
    for route in ("local", "api"):
        try:
            value = after["routes"][route]["requests"] - before["routes"][route]["requests"]
        except (KeyError, TypeError, IndexError):
            continue
        if isinstance(value, int) and 0 < value < 10_000:
            counted[route] = value
    return counted


def inherent_s(plan: GatewayPlan, case: Case, run: CaseRun, took: float) -> float:
    """What no grader could save: waits the case needs, stalls it must wait on, streams it must read."""
    if case.kind == "startup":
        return 0.0
    floor = case.warm_s + (plan.notice_s if case.wait_probe else 0.0) + case.stall_s
    if case.kind == "recover":
        floor += plan.notice_s + run.extra.get("recovered_after_s", 0.0)
    if case.kind == "probe-period":
        floor += (PROBE_PERIODS + 1) * plan.health_interval_s
    if run.answers:
        floor += (
            max((a.get("done_at", 0.0) - a.get("sent_at", 0.0)) for a in run.answers) if case.kind == "one" else 0.0
        )
    return min(took, floor)
