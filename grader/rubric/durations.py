"""How long a load-generator scenario's requests take at its settings, and so when its command is hung."""

from __future__ import annotations

from grader.rubric.load import Scenario

__all__ = ["expected_s", "limit_s", "watch"]


def expected_s(scenario: Scenario) -> float:
    """How long the scenario's requests take at its settings: waves of requests (requests over the slots the
    client may fill) times (prefill overhead + max_tokens at the token rate), plus its longest stall."""
    from fake_server import build_settings

    model = build_settings(**scenario.server).model
    flags = scenario.loadgen
    slots = max(1, min(flags["concurrency"], model.max_num_seqs))
    waves = -(-flags["requests"] // slots)
    stall = max(
        (float(f.get("seconds", 0)) for f in scenario.server.get("faults") or () if "stall" in f.get("kind", "")),
        default=0.0,
    )
    return float(waves * (model.prefill_overhead + flags["max_tokens"] / model.token_rate) + stall)


def limit_s(scenario: Scenario, limits: dict[str, float]) -> float:
    """The scenario's limit: the rubric's start_s + per_expected x (its expected duration + the client's own
    per_request_s for each request it sends)."""
    own = limits["per_request_s"] * float(scenario.loadgen["requests"])
    return round(limits["start_s"] + limits["per_expected"] * (expected_s(scenario) + own), 1)


def watch(server: str, scenario: Scenario, limits: dict[str, float]) -> dict[str, float | str]:
    """How a load generator runs past its limit while `server` still finishes requests: `quiet_s` more at a
    time, never past `most` times its limit (grader.sandbox.jobs.Watch)."""
    return {
        "server": server,
        "quiet_s": limits["quiet_s"],
        "max_s": round(limits["most"] * limit_s(scenario, limits), 1),
    }
