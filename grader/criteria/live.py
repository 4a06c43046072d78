"""Checks only the live exercises judge (`grader live`, grader/unseen/live.yaml); the grade never runs them.

A live exercise puts a state the grade never set in front of the candidate's own gateway: a local route
that slows down, a context that shrinks after a restart, a framing that changes between requests, a 429
storm. What each request must do then follows from the case itself (its faults, its settings, its
request) and the gateway config, as every gateway check's expectation does, never from the case's name:

    live.route        the route each request must take, from the local route's state (see `expected`)
    live.retry-after  a 429 passed through keeps the local server's Retry-After

Both are pure functions of a `GatewayRun`, so `grader rejudge` judges a live run's record as it judges a
grade's. Their rubric entries (text, weight, tolerance) live with the exercises, not in rubric.yaml.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from grader.criteria.gateway.answers import (
    answer_header,
    has_error_body,
    is_complete,
    is_stream,
    judge_cases,
    parse_json,
    statuses_of,
)
from grader.criteria.registry import check
from grader.criteria.verdict import Verdict
from grader.records.gateway import CaseRun, GatewayRun
from grader.rubric import Criterion
from grader.rubric.gateway_plan import Case, GatewayPlan

__all__ = ["PROMPT_SLACK_TOKENS", "Expected", "expected"]

#: Tokens a case's prompt takes besides its words (the chat template's markers, the case's name). A request
#: is judged against the context only when its words and max_tokens are this far from the limit, either way.
PROMPT_SLACK_TOKENS = 32


@dataclass(frozen=True)
class Expected:
    """What the gateway must do with one case's request, and why (for the output)."""

    route: str  # local | api | passthrough | refuse | undecided: who answers the client
    why: str
    local: str = "any"  # served | tried | untouched: what the local ledger must show
    status: int = 200  # the client's status for passthrough and refuse


def _setting(case: Case, plan: GatewayPlan, name: str, default: float) -> float:
    value = case.local_settings.get(name, plan.local_server.get(name, default))
    return float(value)


def expected(case: Case, plan: GatewayPlan, margin_s: float) -> Expected:
    """The route the contract gives one request of `case`, from the local route's state: skipped when its probe
    has seen it unhealthy or the request does not fit its context (503 or 400 under `require: local`, else the
    API with no local attempt); passed through on a 4xx; given up for the API (503 under `require: local`) on
    a 5xx or when its first byte comes more than `margin_s` after first_byte_s; served locally when it comes
    more than `margin_s` before. `undecided` when the case sits inside those margins (a wrongly made exercise,
    which the pool's test rules out)."""
    local_only = case.send.require == "local"
    if case.wait_probe and any(f.get("kind") == "unhealthy" for f in case.local_faults):
        why = "the probe has seen /health answer 503"
        if local_only:
            return Expected("refuse", why + ", and require: local", "untouched", 503)
        return Expected("api", why + ": the local route is skipped", "untouched")
    limit = int(_setting(case, plan, "max_model_len", plan.max_model_len))
    # a body without max_tokens asks for what the context leaves (vLLM's default)
    max_tokens = case.send.max_tokens if case.send.max_tokens is not None else max(1, limit - case.send.words)
    words = case.send.words + max_tokens
    if words > limit:
        why = f"about {words} tokens of prompt and max_tokens, over the local context of {limit}"
        if local_only:
            return Expected("refuse", why + ", and require: local", "untouched", 400)
        return Expected("api", why, "untouched")
    if words + PROMPT_SLACK_TOKENS > limit:
        return Expected("undecided", f"about {words} tokens is too close to the local context of {limit} to judge")
    for fault in case.local_faults:
        if fault.get("kind") == "http_error":
            status = int(fault.get("status", 500))
            if 400 <= status < 500:
                return Expected("passthrough", f"the local route answers {status}", "tried", status)
            if local_only:
                return Expected("refuse", f"the local route answers {status}, and require: local", "tried", 503)
            return Expected("api", f"the local route answers {status}", "tried")
    rate = _setting(case, plan, "token_rate", 100.0)
    waits = _setting(case, plan, "queue_delay", 0.0) + _setting(case, plan, "prefill_overhead", 0.0)
    tokens = min(max_tokens, int(_setting(case, plan, "output_len_max", max_tokens)))
    # a stream's first event comes with its first token; a whole answer arrives with its last
    first_byte = waits + (1 if case.send.stream else max(1, tokens)) / rate
    budget = float(plan.config["local"]["timeouts"]["first_byte_s"])
    what = f"the local route's first byte after about {first_byte:.2f} s against first_byte_s {budget:g} s"
    if first_byte > budget + margin_s:
        if local_only:
            return Expected("refuse", what + ", and require: local", "tried", 503)
        return Expected("api", what, "tried")
    if first_byte < budget - margin_s:
        return Expected("local", what, "served")
    return Expected("undecided", what + ": too close to judge")


def _route_problems(run: CaseRun, want: Expected) -> list[str]:
    answer = run.answers[0] if run.answers else {}
    status = answer.get("status")
    if want.route == "undecided":
        return [f"the exercise cannot judge this case ({want.why})"]
    out: list[str] = []
    served_by = {"local": run.local, "api": run.api}.get(want.route)
    if served_by is not None:
        if not is_complete(run, answer) or not any(r.get("status") == 200 for r in served_by):
            out.append(
                f"the client got HTTP {status}"
                + (" without a whole stream" if is_stream(run) else "")
                + f"; the {want.route} ledger shows HTTP {statuses_of(served_by)}"
            )
    elif status != want.status or not has_error_body(answer):
        out.append(f"the client got HTTP {status}, expected {want.status} with an error body")
    if want.route != "api" and run.api:
        out.append(f"the API ledger shows {len(run.api)} request(s) (HTTP {statuses_of(run.api)})")
    if want.local == "untouched" and run.local:
        out.append(f"the local ledger shows {len(run.local)} attempt(s) (HTTP {statuses_of(run.local)})")
    if want.local == "tried" and not run.local:
        out.append("the local ledger shows no attempt: the local route is tried first")
    if out:
        out[0] += f" ({want.why}: expected {_expected_words(want)})"
    return out


def _expected_words(want: Expected) -> str:
    return {
        "local": "a whole answer from the local route",
        "api": "a whole answer from the API route"
        + (", no local attempt" if want.local == "untouched" else " after a local attempt"),
        "passthrough": f"the local route's {want.status} unchanged",
        "refuse": f"{want.status} from the gateway, the API never asked",
    }.get(want.route, want.route)


def _named_or_single(gw: GatewayRun, criterion: Criterion, keep: Callable[[CaseRun], bool]) -> tuple[str, ...]:
    """The cases the entry names, or every single-request case that `keep` accepts."""
    if criterion.cases:
        return criterion.cases
    return tuple(name for name, run in gw.cases.items() if run.case.kind == "one" and keep(run))


@check("gateway", "live.route", needs=("margin_s",))
def _route(gw: GatewayRun, criterion: Criterion) -> Verdict:
    margin = criterion.tol("margin_s")
    names = _named_or_single(gw, criterion, lambda run: True)
    seen: list[str] = []

    def per_case(run: CaseRun) -> list[str]:
        want = expected(run.case, gw.plan, margin)
        seen.append(f"{run.case.name}: {_expected_words(want)} ({want.why})")
        return _route_problems(run, want)

    verdict = judge_cases(gw, names, per_case, truth="first_byte_s of the local route: " + str(gw.plan.first_byte_s))
    verdict.output += "\n" + "\n".join(seen[:12]) if verdict.passed and seen else ""
    return verdict


def _retry_after(fault: dict[str, Any]) -> str | None:
    value = fault.get("retry_after")
    return None if value is None else f"{value:g}" if isinstance(value, float) else str(value)


def _local_429(run: CaseRun) -> dict[str, Any] | None:
    return next(
        (f for f in run.case.local_faults if f.get("kind") == "http_error" and int(f.get("status", 0)) == 429), None
    )


@check("gateway", "live.retry-after")
def _retry_after_kept(gw: GatewayRun, criterion: Criterion) -> Verdict:
    names = _named_or_single(gw, criterion, lambda run: _local_429(run) is not None)

    def per_case(run: CaseRun) -> list[str]:
        fault = _local_429(run)
        if fault is None or _retry_after(fault) is None:
            return ["the case sets no 429 with Retry-After (the exercise is wrongly made)"]
        answer = run.answers[0] if run.answers else {}
        wanted, got = _retry_after(fault), answer_header(answer, "retry-after")
        out = []
        if answer.get("status") != 429:
            out.append(f"the client got HTTP {answer.get('status')}, expected the local route's 429")
        if got != wanted:
            out.append(f"Retry-After is {got!r}; the local server said {wanted!r}")
        body = parse_json(answer.get("body"))
        if not (isinstance(body, dict) and "error" in body):
            out.append("the 429 reached the client without its error body")
        return out

    return judge_cases(
        gw,
        names,
        per_case,
        evidence=(lambda run: _local_429(run) is not None, "a local 429 with Retry-After"),
    )
