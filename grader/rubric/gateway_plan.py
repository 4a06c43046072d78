"""The gateway section's plan: the config the gateway is started with, both fake servers' settings,
and each case's faults and request, read from the rubric's `gateway:` block.

What a case *is* lives in the rubric (data); how a case runs is running/gateway_session.py, how it is judged
criteria/gateway/. The order of the cases is the order they run in (the last, `quiet_probe` ones
each in a start of the gateway of its own): the local server is stopped only for the last ones,
since a stopped server cannot come back on the port the config names.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass, field
from typing import Any

from fake_server import SettingsError, fill_settings
from grader.shared.contracts import LATEST

__all__ = [
    "TOLD",
    "Case",
    "GatewayPlan",
    "PlanError",
    "Send",
    "billing_as_told",
    "body_for",
    "read_plan",
    "serving_as_told",
]

UNHEALTHY = {"kind": "unhealthy"}
#: The API route's prices in the gateway's config, and the API persona's settings that bill them.
_PRICES = (("input_per_million_usd", "price_input"), ("output_per_million_usd", "price_output"))


class PlanError(ValueError):
    """The rubric's gateway block does not make a plan; the message names the field."""


@dataclass(frozen=True)
class Send:
    """One chat request to the gateway."""

    require: Any = None  # None: no `require` field
    stream: bool = False
    max_tokens: int | None = 8  # None: the body has no max_tokens
    words: int = 6  # prompt length, in words of one token
    fit: str | None = None  # "exact" | "over": max_tokens set from the local /tokenize count


@dataclass(frozen=True)
class Case:
    name: str
    what: str  # one line for the report
    local_faults: tuple[dict[str, Any], ...] = ()
    api_faults: tuple[dict[str, Any], ...] = ()
    local_settings: dict[str, Any] = field(default_factory=dict)
    api_settings: dict[str, Any] = field(default_factory=dict)
    send: Send = Send()
    wait_probe: bool = False  # let the probe see the faults (the plan's notice_s) before sending
    warm_s: float = 0.0  # healthy traffic for this long first (so a cached "healthy" is old)
    kind: str = "one"  # one | recover | concurrent | many | probe-period | startup | require-bad | require-null
    stop_local: bool = False  # the local server is stopped before this case (and stays stopped)
    hold_local: bool = False  # and its port then takes no connection: every connect hangs until it times out
    quiet_probe: bool = False  # run in a start of its own, whose probe has not seen the local server stop
    criteria: tuple[str, ...] = ()  # criteria that judge it besides those naming it (a unseen variant's extra case)
    since: int = 1  # the first contract version whose brief asks for what it checks

    @property
    def stall_s(self) -> float:
        """The longest stall any of its faults makes (0 when none stalls)."""
        return max(
            (float(f.get("seconds", 0)) for f in self.local_faults + self.api_faults if "stall" in f["kind"]),
            default=0.0,
        )

    @property
    def stall(self) -> bool:
        return self.stall_s > 0

    def to_dict(self) -> dict[str, Any]:
        send = {k: v for k, v in vars(self.send).items() if v != getattr(Send(), k)}
        out: dict[str, Any] = {"name": self.name, "what": self.what, "kind": self.kind}
        for key, value in (
            ("local_faults", list(self.local_faults)),
            ("api_faults", list(self.api_faults)),
            ("local_settings", self.local_settings),
            ("api_settings", self.api_settings),
            ("send", send),
            ("wait_probe", self.wait_probe),
            ("warm_s", self.warm_s),
            ("stop_local", self.stop_local),
            ("hold_local", self.hold_local),
            ("quiet_probe", self.quiet_probe),
            ("criteria", list(self.criteria)),
            ("since", self.since if self.since > 1 else 0),
        ):
            if value:
                out[key] = value
        return out

    @classmethod
    def from_dict(cls, raw: dict[str, Any]) -> Case:
        return cls(
            name=raw["name"],
            what=raw["what"],
            kind=raw.get("kind", "one"),
            local_faults=tuple(raw.get("local_faults") or ()),
            api_faults=tuple(raw.get("api_faults") or ()),
            local_settings=dict(raw.get("local_settings") or {}),
            api_settings=dict(raw.get("api_settings") or {}),
            send=Send(**(raw.get("send") or {})),
            wait_probe=bool(raw.get("wait_probe", False)),
            warm_s=float(raw.get("warm_s", 0.0)),
            stop_local=bool(raw.get("stop_local", False)),
            hold_local=bool(raw.get("hold_local", False)),
            quiet_probe=bool(raw.get("quiet_probe", False)),
            criteria=tuple(raw.get("criteria") or ()),
            since=int(raw.get("since", 1)),
        )


@dataclass(frozen=True)
class GatewayPlan:
    """Everything the gateway section runs: config, servers, timings and the cases in order."""

    port: int  # inside the sandbox's own network namespace, below the ephemeral range
    start_timeout_s: float
    quiet_interval_s: float  # the probe interval of a refused-connection start: no probe during it
    notice_margin_s: float
    busy_lag_s: float
    client_model: str
    config: dict[str, Any]  # the gateway config without URLs
    local_server: dict[str, Any]
    api_server: dict[str, Any]
    cases: tuple[Case, ...]
    # a case for more than this share of whose time some task waited for a core ran on a busy machine (None:
    # a plan recorded before the grader counted it)
    cpu_waiting: float | None = None
    contract: int = LATEST  # the contract version of the brief the gateway follows: its config says so

    @property
    def health_interval_s(self) -> float:
        return float(self.config["local"]["health_interval_s"])

    @property
    def first_byte_s(self) -> float:
        return float(self.config["local"]["timeouts"]["first_byte_s"])

    @property
    def connect_s(self) -> float:
        return float(self.config["local"]["timeouts"]["connect_s"])

    @property
    def total_s(self) -> float:
        return float(self.config["local"]["timeouts"]["total_s"])

    @property
    def notice_s(self) -> float:
        """How old a probe result may be before traffic must follow it: one period, one probe's timeout, a margin."""
        return self.health_interval_s + self.first_byte_s + self.notice_margin_s

    @property
    def recovery_s(self) -> float:
        """How soon after /health turns healthy again the contract has the local route used again: one
        period and the margin (a probe answered 200 needs no timeout)."""
        return self.health_interval_s + self.notice_margin_s

    @property
    def local_model(self) -> str:
        return str(self.config["local"]["model"])

    @property
    def api_model(self) -> str:
        return str(self.config["api"]["model"])

    @property
    def max_model_len(self) -> int:
        return int(self.local_server["max_model_len"])

    @property
    def price_out(self) -> float:
        """USD per million output tokens on the API route."""
        return float(self.config["api"]["prices"]["output_per_million_usd"])

    def case(self, name: str) -> Case:
        return next(c for c in self.cases if c.name == name)

    def to_dict(self) -> dict[str, Any]:
        return {
            "port": self.port,
            "start_timeout_s": self.start_timeout_s,
            "quiet_interval_s": self.quiet_interval_s,
            "notice_margin_s": self.notice_margin_s,
            "busy_lag_s": self.busy_lag_s,
            "client_model": self.client_model,
            "config": self.config,
            "servers": {"local": self.local_server, "api": self.api_server},
            "cases": [c.to_dict() for c in self.cases],
            **({"cpu_waiting": self.cpu_waiting} if self.cpu_waiting is not None else {}),
            **({"contract": self.contract} if self.contract != LATEST else {}),
        }


def _told(raw: dict[str, Any], data: dict[str, Any]) -> dict[str, Any]:
    """A case with its `what` stating its own settings and the config's (`{local_faults.0.seconds}`,
    `{config.local.timeouts.first_byte_s}`): an edition that moves them moves the text too."""
    try:
        scope = {**raw, "config": data["config"], "servers": data["servers"]}
        return {**raw, "what": fill_settings(raw["what"], scope)}
    except SettingsError as exc:
        raise PlanError(f"cases.{raw.get('name')}.what: {exc} of the case or its config") from None


def read_plan(data: dict[str, Any]) -> GatewayPlan:
    """The plan from the rubric's `gateway:` block (already schema-checked), with the cross-checks a schema cannot make."""
    cases = tuple(Case.from_dict(_told(raw, data)) for raw in data["cases"])
    names = [c.name for c in cases]
    if twice := sorted({n for n in names if names.count(n) > 1}):
        raise PlanError(f"cases: {twice[0]!r} appears twice")
    config = copy.deepcopy(data["config"])
    local, api = serving_as_told(dict(data["servers"]["local"]), dict(data["servers"]["api"]), config)
    if "max_model_len" not in local:
        raise PlanError("servers.local.max_model_len: the context-length cases need it")
    stopped = [c.name for c in cases if c.stop_local]
    after = [c.name for c in cases[len(cases) - len(stopped) :]]
    if stopped != after:
        raise PlanError(f"cases: the cases that stop the local server ({', '.join(stopped)}) must come last")
    if held := [c.name for c in cases if c.hold_local and not (c.stop_local and c.quiet_probe)]:
        raise PlanError(f"cases.{held[0]}: hold_local holds a stopped server's port: give stop_local and quiet_probe")
    try:
        plan = GatewayPlan(
            int(data["port"]),
            float(data["start_timeout_s"]),
            float(data["quiet_interval_s"]),
            float(data["notice_margin_s"]),
            float(data["busy_lag_s"]),
            str(data["client_model"]),
            config,
            local,
            api,
            cases,
            float(data["cpu_waiting"]) if data.get("cpu_waiting") is not None else None,
            int(data.get("contract", LATEST)),
        )
        plan.health_interval_s, plan.first_byte_s  # noqa: B018 - the config must give both
    except (KeyError, TypeError, ValueError) as exc:
        raise PlanError(f"config: {exc}") from None
    return plan


def billing_as_told(api: dict[str, Any], config: dict[str, Any]) -> dict[str, Any]:
    """The API persona's settings with the prices the gateway's config tells it (one source, the config), so
    the API bills what the gateway is told; a price stated on both sides must agree."""
    prices = config.get("api", {}).get("prices", {})
    for key, setting in _PRICES:
        if not isinstance(prices.get(key), int | float):
            raise PlanError(f"config.api.prices.{key}: the API route's price, a number")
        if setting in api and api[setting] != prices[key]:
            raise PlanError(f"servers.api.{setting}: the API's prices come from config.api.prices.{key}; leave it out")
    return {**api, **{setting: prices[key] for key, setting in _PRICES}}


def serving_as_told(
    local: dict[str, Any], api: dict[str, Any], config: dict[str, Any]
) -> tuple[dict[str, Any], dict[str, Any]]:
    """Both fake servers as the gateway's config names them (one source, the config): each serves the model its
    route names, and the API takes the key the config gives and bills its prices. A setting stated on both
    sides must agree."""
    told = {
        "local": {"served_model_name": [config.get("local", {}).get("model")]},
        "api": {
            "served_model_name": [config.get("api", {}).get("model")],
            "api_key": config.get("api", {}).get("api_key"),
        },
    }
    servers = {"local": local, "api": api}
    for route, settings in told.items():
        for setting, value in settings.items():
            key = "model" if setting == "served_model_name" else setting
            if not isinstance(config.get(route, {}).get(key), str):
                raise PlanError(f"config.{route}.{key}: the {route} route's {key.replace('_', ' ')}, a string")
            if setting in servers[route] and servers[route][setting] != value:
                raise PlanError(f"servers.{route}.{setting}: it comes from config.{route}.{key}; leave it out")
    return {**local, **told["local"]}, billing_as_told({**api, **told["api"]}, config)


#: The server settings `serving_as_told` fills from the config: a drawn config draws them anew.
TOLD = ("served_model_name", "api_key", *(setting for _, setting in _PRICES))


def body_for(plan: GatewayPlan, case: Case, send: Send, *, max_tokens: int | None = None) -> dict[str, Any]:
    """The chat request a case sends: a prompt naming the case, so each is its own text."""
    words = " ".join(f"w{i}" for i in range(send.words))
    body: dict[str, Any] = {
        "model": plan.client_model,
        "max_tokens": max_tokens if max_tokens is not None else send.max_tokens,
        "messages": [{"role": "user", "content": f"case {case.name} {words}"}],
    }
    if body["max_tokens"] is None:
        del body["max_tokens"]  # a body may leave it out: the server then generates up to its context's end
    if send.stream:
        body["stream"] = True
        body["stream_options"] = {"include_usage": True}
    if send.require is not None:
        body["require"] = send.require
    return body
