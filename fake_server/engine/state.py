"""What one running fake server knows: its settings, engines, fault plan, ledger and health.

The Starlette app reads it; the admin endpoints and the Python API change it. It lives on the
server's event loop, and every method is called from that loop.
"""

from __future__ import annotations

import copy
import dataclasses
import sys
import time
from collections import deque
from typing import Any

from fake_server.engine.faults import FaultPlan, parse_rules
from fake_server.engine.ledger import Ledger
from fake_server.engine.step_loop import Engine
from fake_server.server_draw import DRAW_ENV, server_draw
from fake_server.settings import (
    IGNORE_SLOT_LIMIT_ENV,
    ServerSettings,
    SettingsError,
    apply_overrides,
    slot_limit_ignored,
)

__all__ = ["LOGGED_ENDPOINTS", "ServerState"]

#: Endpoints whose every answer is logged with its time: `/health` and `/tokenize`.
LOGGED_ENDPOINTS = ("health", "tokenize")


class ServerState:
    def __init__(self, settings: ServerSettings) -> None:
        settings.validate()
        self.draw = server_draw()
        if self.draw is not None:  # drawn on a copy: settings started twice are drawn once each, never compounded
            settings = copy.deepcopy(settings)
        self.settings = settings
        # what tells this server's response ids from another's with the same seed: its persona, the names it
        # serves and, when it was given one, its port (a fleet's replicas serve the same names on ports of their own)
        port = f":{settings.port}" if settings.port else ""
        self.identity = f"{settings.persona}:{','.join(settings.served_model_name)}{port}"
        self.started = time.perf_counter()
        self.started_at = int(time.time())
        self.healthy = True
        self.ledger = Ledger(settings.ledger, keep=settings.ledger_keep)
        self.faults = FaultPlan(parse_rules(settings.faults), settings.seed)
        self._initial_faults = list(self.faults.rules)
        if self.draw is not None:
            for model in {id(m): m for m in settings.models().values()}.values():
                self.draw.apply(model)
            sys.stderr.write(
                f"fake-server: {DRAW_ENV} is set: every model's slots and token rate are drawn "
                f"({self.draw.describe()}): "
                + ", ".join(
                    f"{name} max_num_seqs {m.max_num_seqs}, token_rate {m.token_rate:g}"
                    for name, m in settings.models().items()
                )
                + "\n"
            )
            sys.stderr.flush()
        self._initial_models = {name: copy.deepcopy(m) for name, m in settings.models().items()}
        self.engines: dict[str, Engine] = {}
        self.ignore_slot_limit = slot_limit_ignored()
        if self.ignore_slot_limit:
            sys.stderr.write(
                f"fake-server: {IGNORE_SLOT_LIMIT_ENV} is set: every model runs without a slot limit "
                "(max_num_seqs, the step token budget and the KV-cache capacity do not limit admission)\n"
            )
            sys.stderr.flush()
        primary: dict[int, Engine] = {}
        for name, model in settings.models().items():
            engine = primary.get(id(model))
            if engine is None:
                engine = primary[id(model)] = Engine(
                    name, model, settings.seed, ignore_slot_limit=self.ignore_slot_limit
                )
            self.engines[name] = engine
        # Every answer of an endpoint that is not a request (`LOGGED_ENDPOINTS`) as (Unix time, status),
        # newest last: a grader reads when a client's probe saw the server healthy or not, and whether it
        # counted a prompt with /tokenize. Kept across resets (a probe is not a request).
        self.endpoint_calls: dict[str, deque[tuple[float, int]]] = {
            name: deque(maxlen=4096) for name in LOGGED_ENDPOINTS
        }
        self.count = 0  # requests of the current generation (the ledger's): numbers restart at each reset
        self.persona: Any = None  # set by create_app; the API persona keeps rate-limit windows

    # -- lifecycle ----------------------------------------------------------------------
    def start(self) -> None:
        self.started = time.perf_counter()
        self.started_at = int(time.time())
        for engine in self.distinct_engines():
            engine.start()

    def abort_all(self) -> None:
        """End every request in flight (the server is going away); their clients see the stream end."""
        for engine in self.distinct_engines():
            for seq in list(engine.waiting) + list(engine.running):
                engine.abort(seq)

    async def stop(self) -> None:
        for engine in self.distinct_engines():
            await engine.stop()
        self.ledger.close()

    def distinct_engines(self) -> list[Engine]:
        seen: dict[int, Engine] = {}
        for engine in self.engines.values():
            seen.setdefault(id(engine), engine)
        return list(seen.values())

    def named_engines(self) -> list[tuple[str, Engine]]:
        return [(e.name, e) for e in self.distinct_engines()]

    # -- per request ----------------------------------------------------------------------
    def next_number(self) -> int:
        self.count += 1
        return self.count

    @property
    def default_model(self) -> str:
        return self.settings.served_model_name[0]

    def starting_up(self) -> bool:
        return time.perf_counter() - self.started < self.settings.model.startup_delay

    def health_ok(self) -> bool:
        """200 on /health: not marked unhealthy, started up, and no engine has crashed."""
        return (
            self.healthy
            and not self.faults.unhealthy
            and not self.starting_up()
            and not any(engine.failed for engine in self.distinct_engines())
        )

    # -- run-time changes ---------------------------------------------------------------
    def config(self) -> dict[str, Any]:
        out = dataclasses.asdict(self.settings)
        out.pop("model")
        out.pop("extra_models")
        out["faults"] = [rule.describe() for rule in self.faults.rules]
        out["models"] = {name: dataclasses.asdict(engine.settings) for name, engine in self.named_engines()}
        return out

    def update_model(self, values: dict[str, Any], model: str | None = None) -> None:
        """Change engine settings of one model (default: all) atomically; nothing changes on error."""
        targets = self.distinct_engines() if model is None else [self._engine(model)]
        staged = []
        for engine in targets:
            new = dataclasses.replace(engine.settings)
            apply_overrides(new, values, f"config of `{engine.name}`")
            if self.draw is not None:  # drawn after the checks of what was asked, as at start-up
                for name, value in self.draw.scale(_asked(new, values)).items():
                    setattr(new, name, value)
            new.validate(f"config of `{engine.name}`")
            engine.check_reconfigure(new)
            staged.append((engine, new))
        for engine, new in staged:
            engine.reconfigure(new)
        if model is None or model in self.settings.served_model_name:
            self.settings.model = self.engines[self.default_model].settings

    def set_faults(self, raw: Any) -> None:
        self.faults.rules = parse_rules(raw, "faults")

    def add_fault(self, raw: Any) -> None:
        self.faults.rules = self.faults.rules + parse_rules([raw], "fault")

    @property
    def generation(self) -> int:
        return self.ledger.generation

    def reset(self) -> None:
        """Back to the state at start: a new ledger generation (numbers from 1 again), counters
        zero, the scenario's faults and settings, health.

        Requests in flight go on and their records stay in their own generation. Start-up
        settings apply at once, to every request from the next engine step; only a KV cache of
        another size cannot be swapped under requests in flight, and then nothing is reset and
        the SettingsError says so.
        """
        staged = []
        for name, engine in self.named_engines():
            original = self._initial_models.get(name)
            if original is None:
                continue
            try:
                engine.check_reconfigure(original)
            except SettingsError as exc:
                raise SettingsError(
                    f"reset refused, nothing was changed: {exc}; wait for them to end, then reset"
                ) from None
            staged.append((engine, copy.deepcopy(original)))
        self.ledger.new_generation()
        self.count = 0
        self.healthy = True
        self.faults.rules = list(self._initial_faults)
        if self.persona is not None:
            self.persona.reset()
        for engine, settings in staged:
            engine.reconfigure(settings)
        for engine in self.distinct_engines():
            if engine.failed:
                engine.start()  # a crashed step loop starts again, empty
            engine.reset()
        self.settings.model = self.engines[self.default_model].settings

    def _engine(self, model: str) -> Engine:
        engine = self.engines.get(model)
        if engine is None:
            raise SettingsError(f"no model named `{model}` (served: {', '.join(self.engines)})")
        return engine


def _asked(settings: Any, values: dict[str, Any]) -> dict[str, Any]:
    """The drawn settings among `values` (already applied to `settings`, so coerced): what a draw scales."""
    keys = {str(k).replace("-", "_") for k in values}
    return {k: getattr(settings, k) for k in ("max_num_seqs", "token_rate") if k in keys}
