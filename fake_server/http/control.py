"""The run-time controls of one server, in JSON terms: one interface for every way of driving it.

`/admin/*` (admin.py) is this interface over HTTP, and an in-process `RunningServer` calls it on
the server's event loop, so a test through either path runs the same code. Every method but
`ledger` is called on the server's loop (the state is not thread-safe); errors are
`SettingsError`s whose message says what to change.
"""

from __future__ import annotations

from typing import Any

from fake_server.engine.state import LOGGED_ENDPOINTS, ServerState
from fake_server.settings import SettingsError

__all__ = ["MAX_SETTLE", "ServerControl"]

MAX_SETTLE = 60.0  # seconds a ledger read may wait for requests in flight


class ServerControl:
    def __init__(self, state: ServerState) -> None:
        self.state = state

    def config(self) -> dict[str, Any]:
        """Every setting, the fault rules and each model's engine settings."""
        return self.state.config()

    def configure(self, values: Any, *, model: str | None = None) -> dict[str, Any]:
        """Change engine settings of one model (default: all) at once; nothing changes on error."""
        if not isinstance(values, dict):
            raise SettingsError('config: expected an object of settings, e.g. {"max_num_seqs": 2}')
        self.state.update_model(values, model)
        return self.state.config()

    def faults(self) -> list[dict[str, Any]]:
        return [rule.describe() for rule in self.state.faults.rules]

    def set_faults(self, rules: Any) -> list[dict[str, Any]]:
        """Replace every fault rule ([] clears them)."""
        self.state.set_faults(rules)
        return self.faults()

    def add_fault(self, rule: Any) -> list[dict[str, Any]]:
        """Append one rule after the existing ones."""
        self.state.add_fault(rule)
        return self.faults()

    def set_healthy(self, healthy: Any) -> bool:
        """Mark the server healthy or not; returns what /health now says."""
        if not isinstance(healthy, bool):
            raise SettingsError(f"health: `healthy` must be true or false, got {healthy!r}")
        self.state.healthy = healthy
        return self.state.health_ok()

    def reset(self) -> None:
        self.state.reset()

    def endpoint_calls(self, endpoint: str, *, since: float = 0.0) -> list[dict[str, Any]]:
        """The answers `/health` or `/tokenize` (`endpoint`: "health" or "tokenize") gave after Unix time
        `since`, oldest first: {"at": time, "status": ...} (the last 4,096 of each are kept, across resets)."""
        log = self.state.endpoint_calls.get(endpoint)
        if log is None:
            raise SettingsError(f"calls: `endpoint` must be one of {', '.join(LOGGED_ENDPOINTS)}, got {endpoint!r}")
        return [{"at": at, "status": status} for at, status in log if at > since]

    def ledger(self, *, since: int = 0, settle: float = 0.0, generation: int | None = None) -> dict[str, Any]:
        """Finished records of one generation (default: the current one) numbered above `since`,
        oldest first, once that generation's requests in flight have ended or `settle` seconds
        have passed, under a header: the generation and what each model's steps wait on
        (`step_timer`). Safe from any thread (the ledger locks); it blocks for up to `settle`."""
        if not 0 <= settle <= MAX_SETTLE:
            raise SettingsError(f"ledger: `settle` must be between 0 and {MAX_SETTLE:g} seconds, got {settle!r}")
        gen = self.state.ledger.generation if generation is None else generation
        records = self.state.ledger.records(settle, generation=gen)
        # The header says what each model's steps wait on (timerfd, kqueue or loop).
        timers = {name: engine.step_timer for name, engine in self.state.named_engines()}
        return {"step_timer": timers, "generation": gen, "records": [r.to_dict() for r in records if r.number > since]}
