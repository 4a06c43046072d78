"""The load generator's prompt: `--prompt-tokens P` asks for P tokens of text, as the fake server counts them.

The ledger keeps, for each request, the tokens of its messages' own text (`message_tokens`): the chat
template's markers and role names, and a system prompt the server's template adds, are the server's, not
the client's. A prompt of "hi" repeated P times is P/6 tokens there (one word of 2P letters, split every 12),
a prompt of P short words P tokens: the figure a client can check with the server's `/tokenize`.
"""

from __future__ import annotations

from typing import Any

from grader.criteria.loadgen.evidence import run_evidence
from grader.criteria.loadgen.observed import Observed
from grader.criteria.registry import check
from grader.criteria.verdict import Verdict
from grader.rubric import Criterion

__all__: list[str] = []  # the check is found through the registry


def _read(record: dict[str, Any]) -> bool:
    """Whether the server read and counted the request's body (a fault that answers first counts nothing)."""
    return int(record.get("prompt_tokens") or 0) > 0


def _allowed(p: int, criterion: Criterion) -> float:
    return max(criterion.tol("tokens_count"), criterion.tol("rel") * p)


def _run_prompt_problems(run: Observed, criterion: Criterion) -> list[str]:
    """The requests of one run whose text is not P tokens, within the tolerance (none read: a problem too)."""
    p = int(run.scenario.loadgen["prompt_tokens"])
    allowed = _allowed(p, criterion)
    read = [r for r in run.ledger if _read(r)]
    if not read:
        return [f"`{run.scenario.name}`: the ledger shows no request the server read: no prompt to count"]
    off = [r for r in read if abs(int(r.get("message_tokens") or 0) - p) > allowed]
    if not off:
        return []
    counts = sorted({int(r.get("message_tokens") or 0) for r in off})
    shown = ", ".join(str(c) for c in counts[:6]) + (" ..." if len(counts) > 6 else "")
    line = (
        f"`{run.scenario.name}`: {len(off)} of {len(read)} requests' messages hold {shown} tokens of text; "
        f"--prompt-tokens {p} allows {p - allowed:g} to {p + allowed:g}"
    )
    return [line]


@check("loadgen", "loadgen.prompt-tokens", needs=("tokens_count", "rel"), by_run=_run_prompt_problems)
def check_prompt_tokens(runs: list[Observed], criterion: Criterion) -> Verdict:
    """In every run the server saw, each request's messages hold `--prompt-tokens` tokens of text."""
    seen = [run for run in runs if run.ledger]
    if not seen:
        return Verdict(False, "no run reached the server: there is no prompt to count", evidence=run_evidence(runs[0]))
    per_run = {run.scenario.name: _run_prompt_problems(run, criterion) for run in seen}
    problems = [line for lines in per_run.values() for line in lines]
    shown = next((run for run in seen if per_run[run.scenario.name]), seen[0])
    p = int(shown.scenario.loadgen["prompt_tokens"])
    counts = sorted({int(r.get("message_tokens") or 0) for r in shown.ledger if _read(r)})
    evidence = run_evidence(
        shown,
        reported=f"--prompt-tokens {p}",
        truth=f"the server counted {', '.join(map(str, counts[:8])) or 'no'} tokens of message text in "
        f"`{shown.scenario.name}` (the chat template's own tokens aside)",
    )
    ok = f"in all {len(seen)} runs every prompt is --prompt-tokens long, within {criterion.tolerance_text}"
    return Verdict(not problems, "\n".join(problems[:12]) or ok, evidence=evidence)
