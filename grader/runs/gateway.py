"""Run the candidate's gateway between a local and an API fake server, through every case.

The gateway is started with one config for all but the last two cases (see below); the two fake
servers live as long as it does, in the sandbox's harness. Before each case the grader resets both
servers (a new ledger generation, no faults, start-up settings) and sets that case's faults and
settings through the harness, never through anything the candidate can reach. Each case sends its
request(s), and keeps the answers, both ledgers and `/stats` before and after. Nothing here
judges: the checks in `gateway.py` do; the cases themselves are in gateway_cases.py.

The fallback on a refused connection needs a gateway whose probe has not yet seen the stop, or
the gateway rightly skips the route and the fallback is never tried. With the section's 0.25 s
probe that is a race the grade would lose at random, so each of those cases runs in a short
start of its own: the gateway started again with the plan's quiet_interval_s, the local
server stopped once the start-up probe has answered 200. Its probe then still says "up" for a
minute (a start each, as a gateway may rightly mark the route down after its first refusal).
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from contextlib import AbstractContextManager
from dataclasses import dataclass, field, replace
from typing import Any, Protocol

from grader.contract import Submission
from grader.runs.gateway_cases import UNHEALTHY, Case, GatewayPlan, Send, body_for, read_plan

__all__ = ["Box", "CaseRun", "GatewayRun", "HangBudget", "gateway_config", "run_gateway"]


def _timed_out(answer: dict[str, Any]) -> bool:
    """The grader stopped waiting for this answer (as opposed to a refused connection, or an answer)."""
    return answer.get("status") is None and "timed out" in str(answer.get("error") or "").lower()


@dataclass
class HangBudget:
    """How long the grader waits for one answer, and how much waiting on a gateway that does not answer a
    section allows before it runs no more cases (the rubric's `limits.gateway`)."""

    request_s: float
    budget_s: float
    spent_s: float = 0.0

    def note(self, answer: dict[str, Any], took_s: float) -> None:
        """Count the wait on an answer that never came."""
        if _timed_out(answer):
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
    def http(
        self, method: str, url: str, *, json: Any = ..., stream: bool = ..., timeout_s: float = ...
    ) -> dict[str, Any]: ...
    def http_many(self, requests: list[dict[str, Any]], *, timeout_s: float = ...) -> list[dict[str, Any]]: ...
    def write_file(self, name: str, text: str) -> str: ...


@dataclass
class CaseRun:
    case: Case
    t0: float  # Unix time the case's first request was sent
    sent: list[dict[str, Any]] = field(default_factory=list)
    answers: list[dict[str, Any]] = field(default_factory=list)  # netops answers (+ "sent_at", "done_at")
    local: list[dict[str, Any]] = field(default_factory=list)  # ledger records
    api: list[dict[str, Any]] = field(default_factory=list)
    stats_before: Any = None
    stats_after: Any = None
    local_stopped: bool = False
    extra: dict[str, Any] = field(default_factory=dict)
    problem: str = ""  # the case could not run (a sandbox error; no new start)

    def to_dict(self) -> dict[str, Any]:
        return {
            "case": self.case.to_dict(),
            "t0": self.t0,
            "sent": self.sent,
            "answers": self.answers,
            "local": self.local,
            "api": self.api,
            "stats_before": self.stats_before,
            "stats_after": self.stats_after,
            "local_stopped": self.local_stopped,
            "extra": self.extra,
            "problem": self.problem,
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> CaseRun:
        return cls(
            Case.from_dict(data["case"]),
            float(data["t0"]),
            list(data["sent"]),
            list(data["answers"]),
            list(data["local"]),
            list(data["api"]),
            data["stats_before"],
            data["stats_after"],
            bool(data["local_stopped"]),
            dict(data["extra"]),
            str(data["problem"]),
        )


@dataclass
class GatewayRun:
    plan: GatewayPlan
    argv: list[str]
    started: bool
    start_problem: str
    cases: dict[str, CaseRun]
    wall_s: float  # the time the gateway ran
    inherent_s: float  # sum of the cases' own durations (stalls, streams, waits)
    stdout_tail: str = ""
    stderr_tail: str = ""
    seed: int = 0

    def to_record(self) -> dict[str, Any]:
        return {
            "plan": self.plan.to_dict(),
            "seed": self.seed,
            "argv": self.argv,
            "started": self.started,
            "start_problem": self.start_problem,
            "wall_s": self.wall_s,
            "inherent_s": self.inherent_s,
            "stdout_tail": self.stdout_tail,
            "stderr_tail": self.stderr_tail,
            "cases": [run.to_dict() for run in self.cases.values()],
        }

    @classmethod
    def from_record(cls, data: dict[str, Any]) -> GatewayRun:
        cases = [CaseRun.from_dict(c) for c in data["cases"]]
        return cls(
            read_plan(data["plan"]),
            list(data["argv"]),
            bool(data["started"]),
            str(data["start_problem"]),
            {c.case.name: c for c in cases},
            float(data["wall_s"]),
            float(data["inherent_s"]),
            str(data["stdout_tail"]),
            str(data["stderr_tail"]),
            int(data["seed"]),
        )

    @property
    def logs(self) -> str:
        out = f"$ {' '.join(self.argv)}"
        if self.stdout_tail.strip():
            out += f"\n--- stdout (tail) ---\n{self.stdout_tail[-3000:]}"
        if self.stderr_tail.strip():
            out += f"\n--- stderr (tail) ---\n{self.stderr_tail[-3000:]}"
        return out


class _Session:
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
        if answer["status"] is None and not _timed_out(answer):  # not answering yet: one more try
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
        if not self.local_stopped:
            healthy_at = time.time()
            self.box.reset(self.local_name)
            if case.local_settings:
                self.box.configure(self.local_name, **case.local_settings)
            if self.was_unhealthy:
                # Let the probe see /health healthy again, so this case does not start in the
                # last one's health state: one state, not a race between probe and request.
                time.sleep(self.plan.notice_s)
                _note_unseen(run, _probe_unseen(self, healthy_at, status=200))
        self.was_unhealthy = any(f.get("kind") == "unhealthy" for f in case.local_faults)
        self.box.reset(self.api_name)
        if case.api_settings:
            self.box.configure(self.api_name, **case.api_settings)

    def ledgers(self, run: CaseRun, settle: float) -> None:
        if not self.local_stopped:
            run.local = self.box.ledger(self.local_name, settle=settle)
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


def _tokens(session: _Session, body: dict[str, Any]) -> int | None:
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


def _run_one(session: _Session, case: Case, run: CaseRun) -> None:
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


def _probed(session: _Session, since: float, status: int) -> bool:
    """Whether the local server's /health answered `status` to anyone after Unix time `since`."""
    return any(c.get("status") == status for c in session.box.health_checks(session.local_name, since=since))


def _probe_unseen(session: _Session, since: float, *, status: int) -> str | None:
    """Why the case's premise, "the probe has seen /health answer `status`", may not hold; None if it does.

    A gateway that never asks /health is judged by the case as it is. One that probes, but did not
    ask in the plan's notice_s since /health turned to `status`, was starved by a busy machine (or
    probes slower than health_interval_s): the case cannot tell right from wrong then."""
    if _probed(session, since, status):
        return None
    notice = session.plan.notice_s
    checks = session.box.health_checks(session.local_name, since=session.started_at)  # only on this rare path
    if not checks:
        return None
    last = max(float(c.get("at", 0.0)) for c in checks)
    state = "healthy again" if status == 200 else f"{status}"
    return (
        f"the gateway's probe did not ask /health in the {notice:g} s after it turned {state} (its "
        f"last probe was {time.time() - last:.2f} s before the request), so the case's premise never held"
    )


def _run_require_bad(session: _Session, case: Case, run: CaseRun) -> None:
    run.t0 = time.time()
    for value in ("remote", 5):
        body = body_for(session.plan, case, Send(require=value))
        run.sent.append(body)
        run.answers.append(session.send(body))


def _run_recover(session: _Session, case: Case, run: CaseRun) -> None:
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


def _run_concurrent(session: _Session, case: Case, run: CaseRun) -> None:
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


def run_gateway(
    box: Box,
    submission: Submission,
    plan: GatewayPlan,
    *,
    seed: int,
    hang: HangBudget,
    cases: tuple[Case, ...] | None = None,
    beside: Callable[[], AbstractContextManager[Box]] | None = None,
) -> GatewayRun:
    """Start both servers and the gateway, run `cases` (default: the plan's) in order, stop everything; never
    raises for the candidate. A gateway that stops answering uses up `hang`, and the cases after are not run.

    The `quiet_probe` cases run after the others, each in a start of the gateway of its own (see the
    module's docstring). With `beside` (a replay's way to open a second sandbox) they run there instead,
    while the others run here: the same cases and starts, a few seconds sooner. They count against the
    hang budget from where it stood, and are dropped if the gateway did not start here, as they would
    not have run."""
    cases = plan.cases if cases is None else cases
    started = time.perf_counter()
    quiet_cases = tuple(c for c in cases if c.quiet_probe)
    initial, own = hang.spent_s, replace(hang)
    with ThreadPoolExecutor(max_workers=1) as pool:
        later = (
            pool.submit(_in_a_box_of_its_own, beside, submission, plan, seed, quiet_cases, own)
            if beside is not None and quiet_cases
            else None
        )
        main = _run_session(
            box, submission, plan, seed, tuple(c for c in cases if not c.quiet_probe), quiet=False, hang=hang
        )
        if main.start_problem:
            quiet = _Restarts()  # a gateway that never started is not started again (what ran beside is dropped)
        elif later is not None:
            quiet = later.result()
            hang.spent_s += own.spent_s - initial
        else:
            quiet = _restarts(box, submission, plan, seed, quiet_cases, hang)
    return GatewayRun(
        plan,
        main.argv,
        not main.start_problem,
        main.start_problem,
        {**main.runs, **quiet.runs},
        time.perf_counter() - started,
        main.inherent + quiet.inherent,
        "".join([main.stdout_tail[-1500:], *quiet.stdout]),  # each start's tail, in order
        "".join([main.stderr_tail[-1500:], *quiet.stderr]),
        seed,
    )


@dataclass
class _Restarts:
    """The quiet-probe cases, each run in a start of the gateway of its own."""

    runs: dict[str, CaseRun] = field(default_factory=dict)
    inherent: float = 0.0
    stdout: list[str] = field(default_factory=list)
    stderr: list[str] = field(default_factory=list)


def _restarts(
    box: Box, submission: Submission, plan: GatewayPlan, seed: int, cases: tuple[Case, ...], hang: HangBudget
) -> _Restarts:
    done = _Restarts()
    for case in cases:
        if why := hang.spent:
            done.runs[case.name] = CaseRun(case, t0=time.time(), problem=why)
            continue
        # A start of its own: the gateway may rightly mark the route down after the first refusal.
        quiet = _run_session(box, submission, plan, seed, (case,), quiet=True, hang=hang)
        done.runs[case.name] = quiet.runs.get(case.name) or CaseRun(
            case, t0=time.time(), problem=f"the gateway did not start again: {quiet.start_problem}"
        )
        done.inherent += quiet.inherent
        marker = f"\n--- started again for {case.name}, health_interval_s {plan.quiet_interval_s:g} ---\n"
        done.stdout += [marker + quiet.stdout_tail[-1000:]] if quiet.stdout_tail.strip() else []
        done.stderr += [marker + quiet.stderr_tail[-1000:]] if quiet.stderr_tail.strip() else []
    return done


def _in_a_box_of_its_own(
    open_box: Callable[[], AbstractContextManager[Box]],
    submission: Submission,
    plan: GatewayPlan,
    seed: int,
    cases: tuple[Case, ...],
    hang: HangBudget,
) -> _Restarts:
    with open_box() as box:
        return _restarts(box, submission, plan, seed, cases, hang)


def gateway_config(
    plan: GatewayPlan, local: dict[str, str], api: dict[str, str], *, quiet: bool = False
) -> dict[str, Any]:
    """The config a gateway is started with: the plan's, with both fake servers' URLs (`serve`'s answers)."""
    config: dict[str, Any] = json.loads(json.dumps(plan.config))
    config["contract"] = 1
    config["local"].update(
        base_url=local["base_url"],
        health_url=local["url"] + "/health",
        health_interval_s=plan.quiet_interval_s if quiet else plan.health_interval_s,
    )
    config["api"]["base_url"] = api["base_url"]
    return config


@dataclass
class _SessionRun:
    argv: list[str]
    start_problem: str
    runs: dict[str, CaseRun]
    inherent: float
    stdout_tail: str
    stderr_tail: str


def _run_session(
    box: Box,
    submission: Submission,
    plan: GatewayPlan,
    seed: int,
    cases: tuple[Case, ...],
    *,
    quiet: bool,
    hang: HangBudget,
) -> _SessionRun:
    """One start of the gateway between two fresh fake servers, through `cases`; `quiet`: probing every
    quiet_interval_s, the cases start once its start-up probe has answered."""
    local_name, api_name = "gateway-local", "gateway-api"
    local = box.serve(local_name, **{**plan.local_server, "seed": seed})
    api = box.serve(api_name, **{**plan.api_server, "seed": seed + 1})
    config = gateway_config(plan, local, api, quiet=quiet)
    path = box.write_file("grader-gateway-config.yaml", json.dumps(config, indent=2) + "\n")  # JSON is YAML
    argv = submission.command("gateway") + ["--config", path, "--port", str(plan.port)]
    session = _Session(box, plan, local_name, api_name, hang)
    session.local_url = local["url"]
    handle = box.spawn(argv, timeout_s=600.0)
    runs: dict[str, CaseRun] = {}
    inherent = 0.0
    start_problem = ""
    try:
        if not box.wait_port(plan.port, timeout_s=plan.start_timeout_s):
            start_problem = f"nothing listened on 127.0.0.1:{plan.port} within {plan.start_timeout_s:g} s of the start"
        else:
            health = session.get("/health")
            if health["status"] != 200 and not _timed_out(health):
                time.sleep(1.0)  # it may still be starting its lifespan
            if quiet:
                _await_first_probe(session)
            for case in cases:
                case_started = time.perf_counter()
                run = CaseRun(case, t0=time.time())
                if why := hang.spent:
                    run.problem = why
                    runs[case.name] = run
                    continue
                try:
                    runs[case.name] = _run_case(session, case, run)
                except Exception as exc:  # noqa: BLE001 - a sandbox error ends this case, and is reported
                    run.problem = f"the grader could not run this case: {type(exc).__name__}: {exc}"
                    runs[case.name] = run
                inherent += _inherent(plan, case, run, time.perf_counter() - case_started)
    finally:
        result = box.stop(handle)
        if not session.local_stopped:
            box.stop_server(local_name)
        box.stop_server(api_name)
    return _SessionRun(
        argv, start_problem, runs, inherent, getattr(result, "stdout_tail", ""), getattr(result, "stderr_tail", "")
    )


def _await_first_probe(session: _Session, timeout_s: float = 5.0) -> None:
    """Wait for the gateway's start-up probe to have had its 200 (the contract says to probe at start).

    A gateway that never probes is judged by the cases as it is; so is one that took longer."""
    until = time.monotonic() + timeout_s
    while time.monotonic() < until:
        if _probed(session, session.started_at, 200):
            return
        time.sleep(0.05)


def _run_case(session: _Session, case: Case, run: CaseRun) -> CaseRun:
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
    elif case.kind == "require-bad":
        _run_require_bad(session, case, run)
    else:
        _run_one(session, case, run)
    # a stalled request ends on the server after its stall; a streamed one when its stream ends
    session.ledgers(run, settle=case.stall_s + 1.0 if case.stall else 3.0)
    run.stats_after = session.stats()
    return run


def _inherent(plan: GatewayPlan, case: Case, run: CaseRun, took: float) -> float:
    """What no grader could save: waits the case needs, stalls it must outlast, streams it must read."""
    if case.kind == "startup":
        return 0.0
    floor = case.warm_s + (plan.notice_s if case.wait_probe else 0.0) + case.stall_s
    if case.kind == "recover":
        floor += plan.notice_s + run.extra.get("recovered_after_s", 0.0)
    if run.answers:
        floor += (
            max((a.get("done_at", 0.0) - a.get("sent_at", 0.0)) for a in run.answers) if case.kind == "one" else 0.0
        )
    return min(took, floor)
