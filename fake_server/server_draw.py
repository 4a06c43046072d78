"""`FAKE_SERVER_DRAW`: servers whose slots and token rate are not the ones their test asked for.

A test of queueing ("more requests than slots raise p90 TTFT") can pass for the wrong reason: it starts a
server with 2 slots, sends 12 requests, and asserts a p90 copied from one run of that scenario. A grader
sets `FAKE_SERVER_DRAW` to a seed to tell such a test from one that reasons from what its server has: every
engine started while it is set runs with its asked `max_num_seqs` multiplied by 2 or 3 and its
`token_rate` by 2 to 3 (two decimals), both drawn from the seed alone. More slots and faster decoding, never
fewer or slower, so a drawn run is no longer than the asked one, and a threshold fitted to the asked
numbers is always on the wrong side.

A test learns what it got from `RunningServer.settings()` (the fixture's server) or from
`GET /admin/config` (a `fake-server serve --admin` it started); `fake-server serve` also says it on stderr.
Settings changed at run time (`configure`, `PATCH /admin/config`) are drawn the same way, and a reset
restores the drawn start-up values.
"""

from __future__ import annotations

import os
import random
from dataclasses import dataclass
from typing import Any

from fake_server.settings import ModelSettings, SettingsError

__all__ = ["DRAW_ENV", "SLOT_FACTORS", "TOKEN_RATE_FACTOR", "ServerDraw", "server_draw"]

DRAW_ENV = "FAKE_SERVER_DRAW"
SLOT_FACTORS = (2, 3)  # the asked max_num_seqs is multiplied by one of these
TOKEN_RATE_FACTOR = (2.0, 3.0)  # the asked token_rate by a factor in this range (two decimals)
_OFF = ("", "0", "off", "no", "false")


@dataclass(frozen=True)
class ServerDraw:
    """The factors one seed draws: every engine's slots and token rate are scaled by them."""

    seed: str
    slots: int
    token_rate: float

    @classmethod
    def from_seed(cls, seed: str) -> ServerDraw:
        rng = random.Random(f"fake-server-draw:{seed}")  # a str seed is hashed: the same in every process
        slots = rng.choice(SLOT_FACTORS)
        rate = round(rng.uniform(*TOKEN_RATE_FACTOR), 2)
        return cls(seed, slots, rate)

    def scale(self, values: dict[str, Any]) -> dict[str, Any]:
        """`values` (settings by name) with `max_num_seqs` and `token_rate` drawn, when they are among them."""
        out = dict(values)
        if "max_num_seqs" in out:
            out["max_num_seqs"] = min(int(out["max_num_seqs"]) * self.slots, _limit("max_num_seqs"))
        if "token_rate" in out:
            out["token_rate"] = min(round(float(out["token_rate"]) * self.token_rate, 6), _limit("token_rate"))
        return out

    def apply(self, settings: ModelSettings) -> None:
        """Draw a start-up engine's slots and token rate, in place."""
        scaled = self.scale({"max_num_seqs": settings.max_num_seqs, "token_rate": settings.token_rate})
        settings.max_num_seqs = scaled["max_num_seqs"]
        settings.token_rate = scaled["token_rate"]

    def describe(self) -> str:
        return f"slots x{self.slots}, token rate x{self.token_rate:g} (seed {self.seed!r})"


def _limit(name: str) -> Any:
    field = ModelSettings.__dataclass_fields__[name]
    return field.metadata["max"]


def server_draw() -> ServerDraw | None:
    """The draw `FAKE_SERVER_DRAW` asks for, or None when it is unset or 0."""
    raw = os.environ.get(DRAW_ENV, "").strip()
    if raw.lower() in _OFF:
        return None
    if len(raw) > 200 or not raw.isprintable():
        raise SettingsError(f"environment variable {DRAW_ENV} must be a short seed, e.g. 7 (got {raw[:40]!r}...)")
    return ServerDraw.from_seed(raw)
