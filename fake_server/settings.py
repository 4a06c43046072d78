"""Settings: one dataclass per level, one place for every default, one validator.

`ModelSettings` holds what one served model's engine does (slots, rates, caches, generation);
`ServerSettings` holds what the process does (address, persona, admin, ledger, faults, models).
Defaults live in the field definitions only. The CLI builds its options from these fields and a
scenario file is read into the same fields, so the precedence is always
defaults < scenario file < command-line flags < `/admin/config` at run time.
"""

from __future__ import annotations

import dataclasses
import math
import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from fake_server.engine.clock import TIMING_ALIASES, TIMING_MODES
from fake_server.engine.faults import parse_rules
from fake_server.errors import SettingsError

__all__ = [
    "IGNORE_SLOT_LIMIT_ENV",
    "ModelSettings",
    "ServerSettings",
    "SettingsError",
    "apply_overrides",
    "describe",
    "fill_settings",
    "model_fields",
    "server_fields",
    "slot_limit_ignored",
]


def _meta(
    help: str,
    *,
    min: float | None = None,
    max: float | None = None,
    choices: tuple[str, ...] | None = None,
    aliases: dict[str, str] | None = None,
    cli: bool = True,
) -> dict[str, Any]:
    return {"help": help, "min": min, "max": max, "choices": choices, "aliases": aliases or {}, "cli": cli}


def _opt(
    default: Any,
    help: str,
    *,
    min: float | None = None,
    max: float | None = None,
    choices: tuple[str, ...] | None = None,
    aliases: dict[str, str] | None = None,
    cli: bool = True,
) -> Any:
    meta = _meta(help, min=min, max=max, choices=choices, aliases=aliases, cli=cli)
    return field(default=default, metadata=meta)


@dataclass
class ModelSettings:
    """How one served model behaves. Rates are per second of wall time."""

    max_num_seqs: int = _opt(256, "Slots: sequences decoded together (vLLM --max-num-seqs).", min=1, max=65536)
    max_num_batched_tokens: int = _opt(
        8192, "Token budget of one engine step; long prompts are prefilled in chunks.", min=1, max=10_000_000
    )
    max_model_len: int = _opt(8192, "Context length: prompt plus max_tokens may not exceed it.", min=16, max=10_000_000)
    token_rate: float = _opt(
        50.0, "Decode steps per second for a batch of one (one token per sequence per step).", min=0.01, max=100_000
    )
    batch_slowdown: float = _opt(
        0.0, "Each extra running sequence makes a decode step this fraction longer (linear).", min=0, max=10
    )
    prefill_rate: float = _opt(20_000.0, "Prompt tokens prefilled per second.", min=1, max=1e9)
    prefill_overhead: float = _opt(
        0.002, "Fixed seconds added to the first prefill step of each request.", min=0, max=600
    )
    queue_delay: float = _opt(
        0.0, "Seconds a request must wait after arrival before it may be scheduled.", min=0, max=600
    )
    jitter: float = _opt(0.0, "Each step's duration is scaled by 1 + U(-jitter, jitter), seeded.", min=0, max=0.9)
    kv_cache_tokens: int = _opt(
        524_288, "KV-cache capacity in tokens (rounded down to blocks of 16).", min=16, max=1_000_000_000
    )
    enable_prefix_caching: bool = _opt(True, "Reuse KV blocks of identical prompt prefixes.")
    enable_prompt_tokens_details: bool = _opt(
        True, "Report usage.prompt_tokens_details.cached_tokens (vLLM's flag; vLLM's default is off, the kit's on)."
    )
    max_waiting: int = _opt(
        0, "Cap on waiting requests; beyond it a request gets 429. 0 = unbounded, as vLLM.", min=0, max=10_000_000
    )
    output_len_min: int = _opt(
        16, "Shortest natural answer, in content tokens, before end-of-sequence.", min=0, max=1_000_000
    )
    output_len_max: int = _opt(
        64, "Longest natural answer, in content tokens, before end-of-sequence.", min=0, max=1_000_000
    )
    reasoning: bool = _opt(False, "Serve a reasoning model: reasoning deltas come before the content.")
    reasoning_tokens: int = _opt(
        32, "Reasoning tokens a reasoning model spends before its answer.", min=0, max=1_000_000
    )
    vllm_profile: str = _opt(
        "current",
        "Wire-format era: 'current' streams delta.reasoning; 'legacy' streams delta.reasoning_content and the older context-length message.",
        choices=("current", "legacy"),
    )
    tokens_per_chunk: int = _opt(
        1, "Tokens per decode step and chunk (speculative decoding); >1 makes chunks != tokens.", min=1, max=64
    )
    role_chunk: str = _opt(
        "with_first_token",
        "When the role-only first chunk is sent: with the first token, as vLLM; when the request is scheduled (before prefill); or on arrival (before queueing).",
        choices=("with_first_token", "on_schedule", "on_arrival"),
    )
    startup_delay: float = _opt(
        0.0, "Seconds after start during which /health answers 503 and requests are refused with 503.", min=0, max=3600
    )
    timing: str = _opt(
        "auto",
        "How the engine waits for a step's end: 'auto' on the kernel's high-resolution timer (timerfd on Linux, kqueue on macOS; 0.1-0.3 ms late, no busy-wait), else as 'loop'; 'loop' on the event loop's timer (up to ~1 ms late). Former names: 'cheap' is 'loop', 'precise' is 'auto'.",
        choices=TIMING_MODES,
        aliases=TIMING_ALIASES,
    )
    default_system_prompt: str = _opt(
        "",
        "A system message the chat template adds to a chat that opens without one (as Qwen2.5's does); it counts in /tokenize, usage and the context-length check.",
    )
    sse_line_ending: str = _opt(
        "lf",
        "Line ending of streamed SSE events: lf as vLLM, crlf as sse-starlette, or cr.",
        choices=("lf", "crlf", "cr"),
    )
    sse_data_space: bool = _opt(True, "Write `data: x` as vLLM (on) or `data:x` (off); both are valid SSE.")
    sse_keepalive_comments: int = _opt(
        0, "Write a `: keep-alive` SSE comment before every k-th event of a stream (0 = never).", min=0, max=1_000_000
    )
    sse_split_writes: bool = _opt(
        False, "Write every SSE event in two halves, 2 ms apart, so a reader sees a partial event."
    )
    sse_coalesce: int = _opt(
        1, "Hold streamed events and write k of them in one write (1 = each event in its own write).", min=1, max=64
    )
    sse_multiline_data: bool = _opt(
        False,
        "Write each event's JSON over several `data:` lines, as the SSE standard allows (a reader joins them with a "
        "newline, which JSON reads as space); vLLM writes one.",
    )
    stream_usage: bool = _opt(
        True,
        "Send the usage chunk a streaming client asks for (`stream_options.include_usage`) as vLLM does; off: none, "
        "as a server that ignores `stream_options` (a client then counts tokens from content deltas).",
    )

    def validate(self, where: str = "settings") -> None:
        _validate(self, where)
        if self.output_len_min > self.output_len_max:
            raise SettingsError(
                f"{where}: output_len_min ({self.output_len_min}) is above output_len_max ({self.output_len_max})"
            )


@dataclass
class ServerSettings:
    """The process: where it listens, who it pretends to be, and what it serves."""

    host: str = _opt("127.0.0.1", "Address to bind (vLLM --host).")
    port: int = _opt(8000, "Port to bind; 0 picks a free one (vLLM --port).", min=0, max=65535)
    served_model_name: list[str] = field(
        default_factory=lambda: ["fake-model"],
        metadata=_meta("Model names served by the default model (vLLM --served-model-name)."),
    )
    persona: str = _opt(
        "local", "'local' behaves like vLLM; 'api' like a hosted, priced, rate-limited API.", choices=("local", "api")
    )
    seed: int = _opt(0, "Seed for generated text, jitter and fault rates.", min=0, max=2**63 - 1)
    ledger: str | None = _opt(None, "Append one JSON line per finished request to this file.")
    ledger_keep: int = _opt(
        50_000,
        "Records kept in memory for /admin/ledger (the oldest go first; the --ledger file keeps all), so a long run's memory stays bounded.",
        min=1,
        max=10_000_000,
    )
    admin: bool = _opt(False, "Enable the /admin/* endpoints.")
    admin_token: str | None = _opt(None, "Require 'Authorization: Bearer TOKEN' on /admin/*.")
    api_key: str | None = _opt(None, "API persona: the bearer key clients must send (unset: any non-empty key).")
    price_input: float = _opt(4.0, "API persona: USD per million input (prompt) tokens.", min=0, max=1e6)
    price_output: float = _opt(20.0, "API persona: USD per million output (completion) tokens.", min=0, max=1e6)
    rpm: int = _opt(0, "API persona: requests per minute per key before 429 (0 = no limit).", min=0, max=10_000_000)
    tpm: int = _opt(
        0,
        "API persona: tokens per minute per key, counted as prompt + max_tokens (0 = no limit).",
        min=0,
        max=10_000_000_000,
    )
    faults: list[dict[str, Any]] = field(
        default_factory=list, metadata=_meta("Fault rules (scenario file or /admin/faults).", cli=False)
    )
    model: ModelSettings = field(default_factory=ModelSettings, metadata={"cli": False, "help": ""})
    extra_models: dict[str, ModelSettings] = field(default_factory=dict, metadata={"cli": False, "help": ""})

    def validate(self) -> None:
        _validate(self, "settings")
        if not self.served_model_name or not all(isinstance(n, str) and n for n in self.served_model_name):
            raise SettingsError("settings: `served_model_name` needs at least one non-empty name")
        self.model.validate("settings")
        parse_rules(self.faults, "faults")
        if self.ledger:
            _check_ledger_path(Path(self.ledger))
        for name, settings in self.extra_models.items():
            if name in self.served_model_name:
                raise SettingsError(f"models.{name}: name already served by the default model")
            settings.validate(f"models.{name}")

    def models(self) -> dict[str, ModelSettings]:
        """Every served name with its settings (aliases of the default model share one engine)."""
        out = {name: self.model for name in self.served_model_name}
        out.update(self.extra_models)
        return out


IGNORE_SLOT_LIMIT_ENV = "FAKE_SERVER_IGNORE_SLOT_LIMIT"


def slot_limit_ignored() -> bool:
    """Whether `FAKE_SERVER_IGNORE_SLOT_LIMIT` asks every engine to run without a slot limit.

    A grader sets it to check that a test of queueing really depends on the slot limit: with it,
    `max_num_seqs`, the step's token budget and the KV-cache capacity stop limiting admission.
    """
    raw = os.environ.get(IGNORE_SLOT_LIMIT_ENV, "").strip().lower()
    if raw in ("", "0", "false", "no", "off"):
        return False
    if raw in ("1", "true", "yes", "on"):
        return True
    raise SettingsError(f"environment variable {IGNORE_SLOT_LIMIT_ENV} must be 1 or 0 (got {raw!r})")


def _check_ledger_path(path: Path) -> None:
    """The ledger file must be creatable: a folder or a missing parent folder is an error now, not at the first request."""
    if path.is_dir():
        raise SettingsError(f"settings: `ledger` {path} is a folder; give a file path, e.g. {path / 'ledger.jsonl'}")
    if not path.parent.is_dir():
        raise SettingsError(f"settings: `ledger` {path}: its folder {path.parent} does not exist")


def model_fields() -> list[dataclasses.Field[Any]]:
    return list(dataclasses.fields(ModelSettings))


def server_fields() -> list[dataclasses.Field[Any]]:
    return [f for f in dataclasses.fields(ServerSettings) if f.metadata.get("cli", True)]


def _field_type(f: dataclasses.Field[Any]) -> str:
    return str(f.type).replace(" ", "")


def _coerce(f: dataclasses.Field[Any], value: Any, where: str) -> Any:
    """Check one value against its field's type and range; YAML ints are accepted for floats."""
    kind = _field_type(f)
    name = f"{where}: `{f.name}`"
    meta = f.metadata
    if kind == "bool":
        if not isinstance(value, bool):
            raise SettingsError(f"{name} must be true or false (got {value!r})")
        return value
    if kind in ("int", "float"):
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise SettingsError(f"{name} must be a number (got {value!r})")
        if kind == "int" and not float(value).is_integer():
            raise SettingsError(f"{name} must be a whole number (got {value!r})")
        value = int(value) if kind == "int" else float(value)
        if isinstance(value, float) and not math.isfinite(value):
            raise SettingsError(f"{name} must be finite (got {value!r})")
        lo, hi = meta.get("min"), meta.get("max")
        if (lo is not None and value < lo) or (hi is not None and value > hi):
            raise SettingsError(f"{name} must be between {lo} and {hi} (got {value!r})")
        return value
    if kind in ("str", "str|None"):
        if value is None and kind == "str|None":
            return None
        if not isinstance(value, str):
            raise SettingsError(f"{name} must be a string (got {value!r})")
        value = meta.get("aliases", {}).get(value, value)
        choices = meta.get("choices")
        if choices and value not in choices:
            raise SettingsError(f"{name} must be one of {', '.join(choices)} (got {value!r})")
        return value
    if kind == "list[str]":
        if isinstance(value, (str, tuple)):
            value = [value] if isinstance(value, str) else list(value)
        if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
            raise SettingsError(f"{name} must be a list of strings (got {value!r})")
        return list(value)
    if kind == "list[dict[str,Any]]":
        if not isinstance(value, list):
            raise SettingsError(f"{name} must be a list (got {value!r})")
        return value
    raise SettingsError(f"{name} cannot be set this way")


def _validate(obj: Any, where: str) -> None:
    for f in dataclasses.fields(obj):
        if f.name in ("model", "extra_models"):
            continue
        _coerce(f, getattr(obj, f.name), where)


def apply_overrides(obj: Any, values: dict[str, Any], where: str) -> None:
    """Set fields of a settings object from a mapping, naming any unknown or invalid key."""
    fields = {f.name: f for f in dataclasses.fields(obj) if f.name not in ("model", "extra_models")}
    for key, value in values.items():
        name = str(key).replace("-", "_")
        f = fields.get(name)
        if f is None:
            raise SettingsError(f"{where}: unknown setting `{key}` (known: {', '.join(sorted(fields))})")
        setattr(obj, name, _coerce(f, value, where))


_SERVER_KEYS = {f.name for f in dataclasses.fields(ServerSettings)} - {"model", "extra_models"}


def read_scenario_file(path: Path) -> dict[str, Any]:
    """The mapping in a YAML scenario file, or a SettingsError naming the file and line."""
    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise SettingsError(f"{path}: cannot read scenario file ({exc.strerror})") from None
    except UnicodeDecodeError as exc:
        raise SettingsError(f"{path}: not UTF-8 text (byte {exc.start}); save it as UTF-8") from None
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        line = f" line {mark.line + 1}" if mark is not None else ""
        raise SettingsError(f"{path}:{line} is not valid YAML ({getattr(exc, 'problem', exc)})") from None
    if data is None:
        return {}
    if not isinstance(data, dict):
        raise SettingsError(f"{path}: a scenario file must be a mapping of settings")
    return data


_FIELD = re.compile(r"\{([a-z_][a-z0-9_.]*)(?::([^}]*))?\}")


def fill_settings(text: str, settings: Any) -> str:
    """`text` with each `{SETTING}` (a dotted path into `settings`: `faults.0.after_tokens`) written from the
    settings, so a description cannot state another number than the one it runs. `{SETTING:ms}` writes seconds
    as milliseconds; any other spec is Python's (`{kv_cache_tokens:,}`); a float is written as `:g` writes it (3.0 as 3).
    Raises SettingsError naming the setting that is not there."""

    def value(match: re.Match[str]) -> str:
        found: Any = settings
        try:
            for step in match.group(1).split("."):
                found = found[int(step)] if isinstance(found, list) else found[step]
        except (KeyError, IndexError, TypeError, ValueError):
            raise SettingsError(f"{{{match.group(1)}}} names no setting") from None
        spec = match.group(2) or ""
        if spec == "ms":
            return f"{found * 1000:g}"
        if spec:
            return format(found, spec)
        return f"{found:g}" if isinstance(found, float) else str(found)

    return _FIELD.sub(value, text)


def describe(data: dict[str, Any]) -> str:
    """A scenario mapping's description, written from its own settings (`fill_settings`)."""
    try:
        return fill_settings(str(data.get("description", "")), data)
    except SettingsError as exc:
        raise SettingsError(f"description: {exc} of the scenario") from None


def apply_scenario(data: dict[str, Any], settings: ServerSettings, where: str) -> str:
    """Apply a scenario mapping to `settings`; return its description.

    The mapping holds settings (server-level and default-model keys side by side), plus optional
    `description`, `faults` (a list of fault rules) and `models` (name -> settings of an extra
    model with its own engine).
    """
    data = dict(data)
    description = describe(data)
    data.pop("description", None)
    extra = data.pop("models", {}) or {}
    server_part = {k: v for k, v in data.items() if str(k).replace("-", "_") in _SERVER_KEYS}
    model_part = {k: v for k, v in data.items() if k not in server_part}
    apply_overrides(settings, server_part, where)
    apply_overrides(settings.model, model_part, where)
    if not isinstance(extra, dict):
        raise SettingsError(f"{where}: `models` must map model names to their settings")
    for name, values in extra.items():
        m = dataclasses.replace(settings.model)
        apply_overrides(m, values or {}, f"{where}: models.{name}")
        settings.extra_models[str(name)] = m
    return str(description)
