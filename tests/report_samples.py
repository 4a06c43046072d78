"""Grades built by hand for the report tests: every status, a hidden criterion, each plot kind,
hostile candidate text, and both sandbox states. Figures here are inputs; tests state what they
expect from them on their own."""

from __future__ import annotations

import random

from grader.outcome import CriterionResult, Evidence, Grade, Plot

# What a hostile or broken submission can print: markup that would close our elements or run,
# an ANSI colour, a NUL, a lone surrogate (undecodable byte kept by surrogateescape), XML's "--".
EVIL = "<script>alert('owned')</script></details></pre>&amp; \x1b[31mred\x1b[0m \x00 \udc80 ]]> -- end"
EVIL_SCRIPT = "<script>alert('owned')</script>"


def _ttft_points(n: int, seed: int) -> tuple[list[float], list[float]]:
    rng = random.Random(seed)
    ledger = [0.05 + 0.01 * i for i in range(n)]
    candidate = [t + rng.uniform(-0.004, 0.004) for t in ledger]
    return ledger, candidate


def sample_grade(*, sandboxed: bool = False, many_points: int = 40) -> Grade:
    """Five criteria over three deliverables: passed 3/3, failed 0/2 (hidden), inconclusive 0/2,
    skipped 0/2, failed with a fraction 2/3; so 5 of 12 points."""
    ledger, candidate = _ttft_points(many_points, seed=7)
    in_flight = [(i * 0.1, float(min(i, 4) if i < 30 else max(34 - i, 0))) for i in range(35)]
    criteria = [
        CriterionResult(
            id="loadgen.ttft",
            title="TTFT per request matches the ledger",
            deliverable="loadgen",
            weight=3,
            visibility="public",
            status="passed",
            score=3,
            output="All TTFTs within 20 ms of the ledger.",
            tolerance="±20 ms per request",
            scenario="baseline",
            duration_s=2.5,
            margin=0.82,
            closest="request 7: TTFT stops +16 ms from the first content chunk the server sent; allowed 20 ms",
            evidence=Evidence(
                sent="fake-server --scenario baseline; loadgen -n 40 -c 4",
                reported="p50 0.25 s, p90 0.41 s",
                truth="p50 0.251 s, p90 0.409 s",
                columns=["id", "candidate ttft s", "ledger ttft s"],
                rows=[[f"chatcmpl-{i}", c, t] for i, (c, t) in enumerate(zip(candidate, ledger))],
                plots=[
                    Plot(
                        kind="scatter",
                        title="TTFT: candidate against ledger",
                        x_label="ledger s",
                        y_label="candidate s",
                        series={"requests": list(zip(ledger, candidate))},
                        diagonal=True,
                    ),
                    Plot(
                        kind="step",
                        title="Requests in flight",
                        x_label="time s",
                        y_label="in flight",
                        series={"ledger": in_flight},
                    ),
                ],
            ),
        ),
        CriterionResult(
            id="loadgen.role-chunk",
            title="TTFT from the first content, not the role chunk",
            deliverable="loadgen",
            weight=2,
            visibility="hidden",
            status="failed",
            score=0,
            output="TTFT 0.01 s reported; the ledger shows the first content at 0.31 s.\n" + EVIL,
            tolerance="±20 ms",
            scenario="role-first",
            duration_s=1.25,
            evidence=Evidence(
                sent="role chunk 300 ms ahead of the content",
                reported=EVIL,
                truth="first content at 0.31 s",
                logs="Traceback (most recent call last):\n" + EVIL,
            ),
        ),
        CriterionResult(
            id="loadgen.p90-queue",
            title="p90 TTFT follows the queueing",
            deliverable="loadgen",
            weight=2,
            visibility="public",
            status="inconclusive",
            score=0,
            output="Borderline twice: 21 ms off, tolerance 20 ms.",
            tolerance="±20 ms",
            scenario="slots",
            duration_s=4.0,
            attempts=2,
            evidence=Evidence(
                plots=[
                    Plot(
                        kind="bar",
                        title="Error per attempt",
                        x_label="attempt",
                        y_label="ms",
                        series={"error ms": [(1, 21.0), (2, 20.5)]},
                    )
                ]
            ),
        ),
        CriterionResult(
            id="gateway.fallback-5xx",
            title="Falls back on a local 5xx",
            deliverable="gateway",
            weight=2,
            visibility="public",
            status="skipped",
            score=0,
            output="Not run: gateway.command is missing from submission.yaml.",
        ),
        CriterionResult(
            id="tests.chaff",
            title="The candidate's tests catch wrong percentiles",
            deliverable="tests",
            weight=3,
            visibility="public",
            status="failed",
            score=2,
            output="Caught 2 of 3 chaffs (missed: floor rank).",
            scenario="chaff",
            duration_s=6.0,
        ),
    ]
    return Grade(
        submission="submissions/<candidate-7>",
        candidate="Ada <b>Lovelace</b>",
        seed=42,
        started="2026-11-30T06:40:00Z",
        duration_s=13.75,
        sandboxed=sandboxed,
        sandbox_note="bubblewrap: own PID and network namespaces"
        if sandboxed
        else "UNSANDBOXED: user namespaces are not available on this machine",
        rubric="grader/rubric/rubric.yaml",
        contract_problems=["gateway: command missing " + EVIL_SCRIPT],
        criteria=criteria,
        human_checklist=["Memo: is the sizing argument sound?", "Memo: are the limits named " + EVIL_SCRIPT],
    )
