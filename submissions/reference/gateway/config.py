"""The gateway's config file (contract 4): read the YAML, check every field, name the wrong one.

Everything the routing needs is in one frozen `GatewayConfig`. The file's shape is the contract's
(`schemas/contract/gateway-config.schema.json`): every field is required and no other key is
allowed, so there are no defaults to keep in step with anything.
"""

from __future__ import annotations

import logging
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import yaml

__all__ = [
    "ApiConfig",
    "ConfigError",
    "GatewayConfig",
    "LocalConfig",
    "Prices",
    "Timeouts",
    "load_config",
    "parse_config",
    "server_root",
]

CONTRACT = 4

log = logging.getLogger("gateway.config")


class ConfigError(ValueError):
    """A config the gateway cannot run with; the message names the file and the field."""


@dataclass(frozen=True)
class Timeouts:
    connect_s: float
    first_byte_s: float  # request sent -> first byte of the answer (a streamed answer's first event)
    total_s: float       # request sent -> last byte


@dataclass(frozen=True)
class LocalConfig:
    base_url: str                   # OpenAI base, e.g. http://127.0.0.1:8001/v1
    model: str
    health_url: str
    health_interval_s: float            # background probe period
    timeouts: Timeouts

    @property
    def server_url(self) -> str:
        return server_root(self.base_url)


@dataclass(frozen=True)
class Prices:
    input_per_million_usd: float
    output_per_million_usd: float


@dataclass(frozen=True)
class ApiConfig:
    base_url: str
    model: str
    api_key: str
    prices: Prices
    timeouts: Timeouts


@dataclass(frozen=True)
class GatewayConfig:
    local: LocalConfig
    api: ApiConfig


class _Field:
    """A value at a dotted path of the file, with checks that raise ConfigError naming that path."""

    def __init__(self, where: str, path: str, value: Any) -> None:
        self.where, self.path, self.value = where, path, value

    def fail(self, problem: str) -> ConfigError:
        return ConfigError(f"{self.where}: `{self.path}` {problem} (got {self.value!r})")

    def mapping(self, keys: tuple[str, ...]) -> dict[str, _Field]:
        """The fields of a mapping that must have exactly these keys."""
        if not isinstance(self.value, dict):
            raise self.fail("must be a mapping")
        unknown = sorted(str(k) for k in self.value if k not in keys)
        if unknown:
            where = f"under `{self.path}`" if self.path else "at the top level"
            raise ConfigError(f"{self.where}: unknown key(s) {where}: {', '.join(unknown)} "
                              f"(allowed: {', '.join(keys)})")
        missing = [k for k in keys if k not in self.value]
        if missing:
            raise ConfigError(f"{self.where}: `{self._join(missing[0])}` is required")
        return {k: _Field(self.where, self._join(k), v) for k, v in self.value.items()}

    def _join(self, key: str) -> str:
        return f"{self.path}.{key}" if self.path else key

    def text(self) -> str:
        if not isinstance(self.value, str) or not self.value.strip():
            raise self.fail("must be a non-empty string")
        return self.value.strip()

    def url(self) -> str:
        value = self.text().rstrip("/")
        parts = urlsplit(value)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise self.fail("must be an http:// or https:// URL with a host")
        return value

    def number(self, positive: bool) -> float:
        value = self.value
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
            raise self.fail("must be a number")
        if positive and value <= 0:
            raise self.fail("must be greater than 0")
        if value < 0:
            raise self.fail("must not be negative")
        return float(value)


def server_root(base_url: str) -> str:
    """Where vLLM serves `/tokenize` and `/health`: the OpenAI base URL without its `/v1`."""
    return base_url.removesuffix("/v1")


def _timeouts(field: _Field) -> Timeouts:
    f = field.mapping(("connect_s", "first_byte_s", "total_s"))
    timeouts = Timeouts(*(f[k].number(positive=True) for k in ("connect_s", "first_byte_s", "total_s")))
    if timeouts.first_byte_s > timeouts.total_s:  # legal in the contract, but surely not what was meant
        log.warning("%s: `%s.first_byte_s` (%g) is above `%s.total_s` (%g); the total timeout will fire first",
                    field.where, field.path, timeouts.first_byte_s, field.path, timeouts.total_s)
    return timeouts


def _local(field: _Field) -> LocalConfig:
    f = field.mapping(("base_url", "model", "health_url", "health_interval_s", "timeouts"))
    return LocalConfig(base_url=f["base_url"].url(), model=f["model"].text(), health_url=f["health_url"].url(),
                       health_interval_s=f["health_interval_s"].number(positive=True),
                       timeouts=_timeouts(f["timeouts"]))


def _api(field: _Field) -> ApiConfig:
    f = field.mapping(("base_url", "model", "api_key", "prices", "timeouts"))
    p = f["prices"].mapping(("input_per_million_usd", "output_per_million_usd"))
    prices = Prices(p["input_per_million_usd"].number(positive=False),
                    p["output_per_million_usd"].number(positive=False))
    return ApiConfig(base_url=f["base_url"].url(), model=f["model"].text(), api_key=f["api_key"].text(),
                     prices=prices, timeouts=_timeouts(f["timeouts"]))


def parse_config(data: Any, where: str = "config") -> GatewayConfig:
    """A checked config from the file's parsed YAML."""
    top = _Field(where, "", data)
    if not isinstance(data, dict):
        raise ConfigError(f"{where}: must be a mapping with `contract`, `local` and `api` (got {type(data).__name__})")
    f = top.mapping(("contract", "local", "api"))
    contract = f["contract"].value
    if isinstance(contract, bool) or contract != CONTRACT:
        raise ConfigError(f"{where}: `contract` must be {CONTRACT}, the only version this gateway speaks "
                          f"(got {contract!r})")
    return GatewayConfig(local=_local(f["local"]), api=_api(f["api"]))


class _UniqueKeyLoader(yaml.SafeLoader):
    """YAML's safe loader, but a key given twice is an error instead of the last one silently winning."""


def _construct_mapping(loader: _UniqueKeyLoader, node: yaml.MappingNode, deep: bool = False) -> dict[Any, Any]:
    seen: set[Any] = set()
    for key_node, _ in node.value:
        key = loader.construct_object(key_node, deep=deep)
        if key in seen:
            raise yaml.constructor.ConstructorError(None, None, f"key {key!r} appears twice", key_node.start_mark)
        seen.add(key)
    return yaml.SafeLoader.construct_mapping(loader, node, deep)


_UniqueKeyLoader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, _construct_mapping)


def load_config(path: str | Path) -> GatewayConfig:
    """Read and check the config file; every problem is a ConfigError with a one-line reason."""
    where = str(path)
    try:
        text = Path(path).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"{where}: cannot read the config file: {getattr(exc, 'strerror', None) or exc}") from None
    try:
        data = yaml.load(text, Loader=_UniqueKeyLoader)
    except yaml.YAMLError as exc:
        raise ConfigError(f"{where}: not valid YAML: {' '.join(str(exc).split())}") from None
    return parse_config(data, where)
