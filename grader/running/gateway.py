"""Run the candidate's gateway between a local and an API fake server, through every case.

The gateway is started with one config for all but the last two cases (see below); the two fake
servers live as long as it does, in the sandbox's harness. How each case is driven and what it
keeps is in gateway_session.py; the cases themselves are in gateway_cases.py. Nothing here
judges: the checks in criteria/gateway/ do.

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
from typing import Any

from grader.contract import Submission
from grader.records.gateway import CaseRun, GatewayRun, timed_out
from grader.rubric.gateway_plan import Case, GatewayPlan
from grader.running.cpu_wait import CpuWait
from grader.running.gateway_session import HangBudget, Session, await_first_probe, inherent_s, run_case
from grader.sandbox.box_api import Box

__all__ = ["HangBudget", "gateway_config", "run_gateway"]


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


def _ending(result: Any) -> str:
    """How a command that ended by itself ended ("exit code 1", "signal 11"); "" when it was killed by the
    sandbox or its end is unknown (a gateway started by hand)."""
    if getattr(result, "killed", None) is not None:
        return ""
    if (code := getattr(result, "exit_code", None)) is not None:
        return f"exit code {code}"
    if (number := getattr(result, "signal", None)) is not None:
        return f"signal {number}"
    return ""


def gateway_config(
    plan: GatewayPlan, local: dict[str, str], api: dict[str, str], *, quiet: bool = False
) -> dict[str, Any]:
    """The config a gateway is started with: the plan's, with both fake servers' URLs (`serve`'s answers)."""
    config: dict[str, Any] = json.loads(json.dumps(plan.config))
    config["contract"] = plan.contract
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
    session = Session(box, plan, local_name, api_name, hang)
    session.local_url = local["url"]
    handle = box.spawn(argv, timeout_s=600.0)
    runs: dict[str, CaseRun] = {}
    inherent = 0.0
    start_problem = ""
    try:
        if not box.wait_port(plan.port, timeout_s=plan.start_timeout_s, handle=handle):
            start_problem = f"nothing listened on 127.0.0.1:{plan.port} within {plan.start_timeout_s:g} s of the start"
        else:
            health = session.get("/health")
            if health["status"] != 200 and not timed_out(health):
                time.sleep(1.0)  # it may still be starting its lifespan
            if quiet:
                await_first_probe(session)
            for case in cases:
                case_started = time.perf_counter()
                run = CaseRun(case, t0=time.time())
                if why := hang.spent:
                    run.problem = why
                    runs[case.name] = run
                    continue
                waiting = CpuWait()
                try:
                    runs[case.name] = run_case(session, case, run)
                    if (share := waiting.share()) is not None:
                        run.extra["cpu_waiting"] = share
                except Exception as exc:  # noqa: BLE001 - a sandbox error ends this case, and is reported
                    run.problem = f"the grader could not run this case: {type(exc).__name__}: {exc}"
                    runs[case.name] = run
                took = time.perf_counter() - case_started
                run.extra["case_s"] = round(took, 3)
                inherent += inherent_s(plan, case, run, took)
    finally:
        result = box.stop(handle)
        if start_problem and (ending := _ending(result)):
            start_problem = f"nothing listened on 127.0.0.1:{plan.port}: the gateway exited first ({ending})"
        if not session.local_stopped:
            box.stop_server(local_name)
        box.stop_server(api_name)
    return _SessionRun(
        argv, start_problem, runs, inherent, getattr(result, "stdout_tail", ""), getattr(result, "stderr_tail", "")
    )
