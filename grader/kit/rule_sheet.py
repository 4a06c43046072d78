"""The brief's numbers, written from the rubric an edition grades with, so the brief and the grade cannot differ.

Two parts of starter/TASK.md (grader/kit/generated.py keeps the default edition's up to date; `grader bundle
--edition NAME` writes NAME's):
- `memo-scenario`: what the memo sizes for (grader/rubric/editions.py `MemoScenario`);
- `rule-sheet`: every public criterion with its weight, the runs it is judged from and its tolerance; every
  published load-generator scenario with its server settings and flags; the gateway's config, servers and
  cases; and the sizing check's public input sets and refusals.
"""

from __future__ import annotations

import textwrap
from typing import Any

from grader.rubric import Rubric, load_rubric
from grader.rubric.editions import memo_scenario
from grader.rubric.sizing_plan import argv
from grader.shared.contracts import DEFAULT_EDITION

__all__ = ["render_memo_scenario", "render_rule_sheet"]

_WIDTH = 104


def _n(value: float) -> str:
    """A number as the brief writes it: thousands separated, no trailing zeros."""
    return f"{value:,.0f}" if float(value).is_integer() else f"{value:,.2f}".rstrip("0").rstrip(".")


def _usd(value: float) -> str:
    return f"${value:.2f}" if not float(value).is_integer() else f"${value:.0f}"


def render_memo_scenario(edition: str = DEFAULT_EDITION) -> str:
    """The brief's answer to "What does the memo size for?", with edition `edition`'s numbers."""
    s = memo_scenario(edition)
    low, high = s.gpu_hour_usd
    text = (
        f"- **What does the memo size for?** One scenario: **{s.model}** (served as `{s.served}`, as in "
        f"`fleet.yaml`; BF16 weights {_n(s.weights_gb)} GB; KV cache {_n(s.kv_bytes_per_token)} bytes per token at "
        f"16 bits: {s.layers} layers × {s.kv_heads} KV heads × {s.head_dim} × K and V × 2 bytes; a "
        f"{_n(s.context)}-token context) on **{s.gpu}** GPUs at **{_usd(low)} and {_usd(high)} per GPU-hour**, "
        f"for **{_n(s.chats_per_day)} chats a day, {s.turns_per_chat} turns a chat, {_n(s.input_tokens_per_turn)} "
        f"input and {_n(s.output_tokens_per_turn)} output tokens a turn, over {_n(s.active_hours)} active hours, "
        f"with a peak hour {_n(s.peak_factor)}× the average**, against a hosted API at "
        f"**{_usd(s.api_input_usd_per_million)} per million input and {_usd(s.api_output_usd_per_million)} per "
        "million output tokens** (the fleet's API charges the same). The replica's throughput is yours to "
        "measure or assume, and to label. The files in `../schemas/contract/examples/` show the formats with "
        "other figures."
    )
    return textwrap.fill(text, _WIDTH, subsequent_indent="  ", break_on_hyphens=False, break_long_words=False)


def _settings(values: dict[str, Any]) -> str:
    """Settings as `key=value`, a fault as its kind and the settings it gives."""
    out = []
    for key, value in values.items():
        if key == "faults":
            for fault in value:
                rest = ", ".join(f"{k}={v}" for k, v in fault.items() if k != "kind")
                out.append(f"fault {fault['kind']}({rest})")
        else:
            out.append(f"{key}={value}")
    return "; ".join(out)


def _flags(loadgen: dict[str, Any]) -> str:
    return " ".join(f"--{k.replace('_', '-')} {v}" for k, v in loadgen.items())


def _cell(text: str) -> str:
    return text.replace("|", "/").replace("\n", " ")


def render_rule_sheet(rubric: Rubric | None = None) -> str:
    """The rule sheet of `rubric` (default: the kit's, default edition): public criteria and what they run."""
    rubric = rubric or load_rubric()
    public = [c for c in rubric.criteria if c.visibility == "public" and c.in_brief]
    used = {name for c in public for name in c.scenarios}
    scenarios = [s for s in rubric.scenarios.values() if s.name in used]
    every = {s.name for s in scenarios}
    intro = (
        f"The numbers `grader check` and the grade use (edition `{rubric.edition}`). The grade also runs unseen "
        "variants of these, drawn from the domains above, and unseen sizing sets."
    )
    lines = [
        textwrap.fill(intro, _WIDTH),
        "",
        "**Criteria** (public; a tolerance is how far a figure may be from the ledger's or the grader's own):",
        "",
        "| criterion | weight | judged from | tolerance |",
        "| --- | --- | --- | --- |",
    ]
    for c in public:
        runs = (
            "every scenario"
            if c.scenarios and set(c.scenarios) >= every
            else ", ".join(c.scenarios or c.cases) or ("every case" if c.deliverable == "gateway" else c.deliverable)
        )
        lines.append(f"| `{c.id}` | {c.weight:g} | {_cell(runs)} | {_cell(c.tolerance_text) or 'exact'} |")
    lines += ["", "**Load-generator scenarios** (the server's settings, then the flags your command is given):", ""]
    lines += ["| scenario | what | server | flags |", "| --- | --- | --- | --- |"]
    for s in scenarios:
        lines.append(f"| `{s.name}` | {_cell(s.description)} | {_cell(_settings(s.server))} | `{_flags(s.loadgen)}` |")
    plan = rubric.gateway
    lines += ["", "**Gateway**: the config it is started with (the grader fills in the URLs), then its cases:", ""]
    lines += ["```yaml"]
    for route, values in plan.config.items():
        lines.append(f"{route}: {_inline(values)}")
    lines += ["```", "", f"The local server's `max_model_len`: {plan.local_server['max_model_len']}.", ""]
    lines += ["| case | what |", "| --- | --- |"]
    lines += [f"| `{c.name}` | {_cell(c.what)} |" for c in plan.cases if c.since <= rubric.contract]
    lines += ["", "**Sizing**: the public input sets your command is run on (and each input moved, one at a time):", ""]
    for name, flags in rubric.sizing.sets.items():
        lines.append(f"- `{name}`: `{' '.join(argv(flags))}`")
    refused = ", ".join(f"`{r.name}`" for r in rubric.sizing.refuse)
    lines.append(f"- refused (exit non-zero, naming the flag): {refused}.")
    return "\n".join(lines)


def _inline(values: Any) -> str:
    if isinstance(values, dict):
        return "{" + ", ".join(f"{k}: {_inline(v)}" for k, v in values.items()) + "}"
    return f"{values:g}" if isinstance(values, float) else str(values)
