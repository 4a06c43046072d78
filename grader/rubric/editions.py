"""Editions: each cohort's bundle publishes numbers of its own, so no solution fits the next cohort.

    from grader.rubric.editions import memo_scenario, with_edition
    scenario = memo_scenario("spring-2027")      # the memo's model, GPU, prices and workload
    data = with_edition(rubric_data, "spring-2027")  # the rubric's raw data with the edition's numbers

An edition is a name. Its numbers are drawn, seeded by the name alone, from grader/rubric/editions.yaml: the
memo's scenario (which becomes the sizing check's `seed` set), some published scenario settings, and the
published gateway config with the case settings that follow it. The edition `default` draws nothing: the
rubric's own numbers, the seed's. Because the draw depends on the name and this file only, a bundle's edition
grades the same after the kit has moved on, as long as the file's draws for it are kept (a test holds one
edition's numbers to a recording).
"""

from __future__ import annotations

import copy
import functools
import hashlib
import random
import re
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from grader.rubric.draws import DrawError, drawn, problem_of
from grader.rubric.files import DEFAULT_RUBRIC
from grader.shared.contracts import DEFAULT_EDITION
from grader.shared.yaml_files import read_yaml

__all__ = [
    "EDITIONS_FILE",
    "EditionError",
    "MemoScenario",
    "check_name",
    "edition_numbers",
    "memo_scenario",
    "with_edition",
]

EDITIONS_FILE = Path(__file__).resolve().with_name("editions.yaml")
_NAME = re.compile(r"[a-z0-9][a-z0-9-]{0,39}")
_HEADROOM = 0.9  # a model fits a GPU when its weights and the overhead take at most this share of its memory
_OVERHEAD_GB = 5.0
_TRIES = 200


class EditionError(ValueError):
    """An edition's name is not one, or editions.yaml cannot draw it; the message says which."""


def check_name(name: str) -> str:
    """The name, when it can name an edition: lower-case letters, digits and dashes, up to 40."""
    if not _NAME.fullmatch(name):
        raise EditionError(
            f"edition {name!r}: a name is 1 to 40 lower-case letters, digits and dashes, starting with a "
            "letter or digit (e.g. spring-2027)"
        )
    return name


@dataclass(frozen=True)
class MemoScenario:
    """What the memo sizes for: one model on one GPU at two prices, a workload, and the hosted API's prices."""

    model: str
    source: str  # its Hugging Face id (the chart's model.source)
    served: str  # the name the fleet serves it as
    weights_gb: float  # BF16 weights
    layers: int
    kv_heads: int
    head_dim: int
    context: int
    gpu: str
    gpu_memory_gb: float
    gpu_hour_usd: tuple[float, float]
    chats_per_day: int
    turns_per_chat: int
    input_tokens_per_turn: int
    output_tokens_per_turn: int
    active_hours: float
    peak_factor: float
    api_input_usd_per_million: float
    api_output_usd_per_million: float

    @property
    def kv_bytes_per_token(self) -> int:
        """At 16 bits: layers x KV heads x head size x K and V x 2 bytes."""
        return self.layers * self.kv_heads * self.head_dim * 2 * 2

    def sizing_flags(self) -> dict[str, Any]:
        """The sizing flags this scenario sets (the sizing check's `seed` set takes them)."""
        return {
            "gpu-hour-usd": list(self.gpu_hour_usd),
            "chats-per-day": self.chats_per_day,
            "turns-per-chat": self.turns_per_chat,
            "output-tokens-per-turn": self.output_tokens_per_turn,
            "input-tokens-per-turn": self.input_tokens_per_turn,
            "active-hours": self.active_hours,
            "peak-factor": self.peak_factor,
            "api-input-usd-per-million": self.api_input_usd_per_million,
            "api-output-usd-per-million": self.api_output_usd_per_million,
            "gpu-memory-gb": self.gpu_memory_gb,
            "weights-gb": self.weights_gb,
            "kv-bytes-per-token": self.kv_bytes_per_token,
        }

    def to_dict(self) -> dict[str, Any]:
        return asdict(self) | {"kv_bytes_per_token": self.kv_bytes_per_token}


@functools.cache
def _spec() -> dict[str, Any]:
    data: dict[str, Any] = read_yaml(EDITIONS_FILE)
    problems = []
    for section in ("scenarios", "gateway"):
        for where, draws in _draw_blocks(data.get(section) or {}, section):
            problems += [f"{where}.{path}: {p}" for path, spec in draws.items() if (p := problem_of(spec))]
    problems += _memo_problems(data.get("memo"))
    if problems:
        raise EditionError(f"{EDITIONS_FILE}: " + "; ".join(problems))
    return data


_MODEL_KEYS = {"name", "source", "served", "weights_gb", "layers", "kv_heads", "head_dim", "context"}
_DEFAULT_KEYS = {"model", "gpu", "gpu_hour_usd", "chats_per_day", "turns_per_chat", "input_tokens_per_turn",
                 "output_tokens_per_turn", "active_hours", "peak_factor", "api_input_usd_per_million",
                 "api_output_usd_per_million"}  # fmt: skip


def _memo_problems(memo: Any) -> list[str]:
    """What keeps the memo block from drawing a scenario, each with its field."""
    if not isinstance(memo, dict):
        return ["memo: the memo's scenario (default, models, gpus, numbers)"]
    out = []
    default, models, gpus = memo.get("default") or {}, memo.get("models") or [], memo.get("gpus") or []
    out += [f"memo.default.{k}: missing" for k in sorted(_DEFAULT_KEYS - set(default))]
    out += [f"memo.models[{i}]: needs {', '.join(sorted(_MODEL_KEYS))}" for i, m in enumerate(models)
            if not isinstance(m, dict) or not _MODEL_KEYS <= set(m)]  # fmt: skip
    out += [f"memo.gpus[{i}]: needs name and memory_gb" for i, g in enumerate(gpus)
            if not isinstance(g, dict) or not {"name", "memory_gb"} <= set(g)]  # fmt: skip
    if not out and default.get("model") not in {m["name"] for m in models}:
        out.append(f"memo.default.model: {default.get('model')!r} is none of memo.models")
    if not out and default.get("gpu") not in {g["name"] for g in gpus}:
        out.append(f"memo.default.gpu: {default.get('gpu')!r} is none of memo.gpus")
    numbers = memo.get("numbers") or {}
    needed = {"gpu_hour_usd_low", "gpu_hour_usd_high_ratio"} | (_DEFAULT_KEYS - {"model", "gpu", "gpu_hour_usd"})
    out += [f"memo.numbers.{k}: missing" for k in sorted(needed - set(numbers))]
    for key, spec in numbers.items():
        ok = isinstance(spec, dict) and set(spec) == {"range", "step"}
        ok = ok and isinstance(spec["step"], int | float) and not isinstance(spec["step"], bool) and spec["step"] > 0
        if not ok or problem_of(spec["range"]):
            out.append(f"memo.numbers.{key}: {{range: [lo, hi], step: S}} with lo <= hi and S above 0")
    return out


def _draw_blocks(block: dict[str, Any], section: str) -> list[tuple[str, dict[str, Any]]]:
    if section == "scenarios":
        return [(f"scenarios.{name}", draws) for name, draws in block.items()]
    out = [(f"gateway.{part}", block.get(part) or {}) for part in ("config", "servers")]
    return out + [(f"gateway.cases.{name}", draws) for name, draws in (block.get("cases") or {}).items()]


def _rng(name: str, part: str) -> random.Random:
    """A generator seeded by the edition's name and the part drawn (so adding a part moves no other)."""
    digest = hashlib.sha256(f"edition:{name}:{part}".encode()).digest()
    return random.Random(int.from_bytes(digest[:8], "big"))


def _stepped(rng: random.Random, spec: dict[str, Any], avoid: set[Any]) -> float:
    lo, hi = spec["range"]
    step = spec["step"]
    count = round((hi - lo) / step)
    for _ in range(_TRIES):
        value = round(lo + step * rng.randint(0, count), 2)
        if value not in avoid:
            return int(value) if float(value).is_integer() and float(step).is_integer() else value
    raise EditionError(f"{EDITIONS_FILE}: memo.numbers: no value of {spec} avoids {sorted(avoid)}")


@functools.cache
def memo_scenario(name: str = DEFAULT_EDITION) -> MemoScenario:
    """The memo's scenario in edition `name`: the default's as editions.yaml gives it, else drawn."""
    check_name(name)
    memo = _spec()["memo"]
    default = memo["default"]
    models = {m["name"]: m for m in memo["models"]}
    gpus = {g["name"]: g for g in memo["gpus"]}
    if name == DEFAULT_EDITION:
        model, gpu, values = models[default["model"]], gpus[default["gpu"]], dict(default)
        values["gpu_hour_usd"] = tuple(default["gpu_hour_usd"])
    else:
        rng = _rng(name, "memo")
        model = rng.choice([m for m in memo["models"] if m["name"] != default["model"]])
        fits = [
            g
            for g in memo["gpus"]
            if g["memory_gb"] != gpus[default["gpu"]]["memory_gb"]
            and model["weights_gb"] + _OVERHEAD_GB <= _HEADROOM * g["memory_gb"]
        ]
        gpu = rng.choice(fits)
        perturb = _perturb()
        numbers = memo["numbers"]
        values = {}
        low = _stepped(rng, numbers["gpu_hour_usd_low"], {default["gpu_hour_usd"][0], *perturb["gpu-hour-usd"]})
        ratio = _stepped(rng, numbers["gpu_hour_usd_high_ratio"], set())
        high = round(low * ratio, 2)
        if high in {default["gpu_hour_usd"][1], *perturb["gpu-hour-usd"]}:
            high = round(high + 0.01, 2)
        values["gpu_hour_usd"] = (low, high)
        for key, spec in numbers.items():
            if key.startswith("gpu_hour_usd"):
                continue
            flag = key.replace("_", "-")
            values[key] = _stepped(rng, spec, {default[key], *([perturb[flag]] if flag in perturb else [])})
    return MemoScenario(
        model=model["name"],
        source=model["source"],
        served=model["served"],
        weights_gb=float(model["weights_gb"]),
        layers=int(model["layers"]),
        kv_heads=int(model["kv_heads"]),
        head_dim=int(model["head_dim"]),
        context=int(model["context"]),
        gpu=gpu["name"],
        gpu_memory_gb=float(gpu["memory_gb"]),
        gpu_hour_usd=(float(values["gpu_hour_usd"][0]), float(values["gpu_hour_usd"][1])),
        chats_per_day=int(values["chats_per_day"]),
        turns_per_chat=int(values["turns_per_chat"]),
        input_tokens_per_turn=int(values["input_tokens_per_turn"]),
        output_tokens_per_turn=int(values["output_tokens_per_turn"]),
        active_hours=values["active_hours"],
        peak_factor=values["peak_factor"],
        api_input_usd_per_million=values["api_input_usd_per_million"],
        api_output_usd_per_million=values["api_output_usd_per_million"],
    )


@functools.cache
def _perturb() -> dict[str, Any]:
    """The sizing check's perturbed values (the rubric's `sizing.perturb`): no edition's number may be one."""
    perturb = dict(read_yaml(DEFAULT_RUBRIC)["sizing"]["perturb"])
    perturb["gpu-hour-usd"] = list(perturb.get("gpu-hour-usd") or [])
    return perturb


def with_edition(data: dict[str, Any], name: str) -> dict[str, Any]:
    """The rubric's raw data (as rubric.yaml holds it) with edition `name`'s numbers; the same data for the
    default edition. Descriptions and case texts follow their settings when the rubric is read."""
    check_name(name)
    if name == DEFAULT_EDITION:
        return data
    out = copy.deepcopy(data)
    spec = _spec()
    scenario = memo_scenario(name)
    seed_set = out["sizing"]["sets"][out["sizing"]["perturb_base"]]
    for flag, value in scenario.sizing_flags().items():
        if flag in seed_set:
            seed_set[flag] = value
    try:
        for scenario_name, draws in (spec.get("scenarios") or {}).items():
            out["scenarios"][scenario_name] = drawn(
                out["scenarios"][scenario_name], draws, _rng(name, f"scenario:{scenario_name}")
            )
        gateway = out["gateway"]
        plan = spec.get("gateway") or {}
        published = {"published": {"config": data["gateway"]["config"], "servers": data["gateway"]["servers"]}}
        gateway["config"] = drawn(gateway["config"], plan.get("config") or {}, _rng(name, "gateway:config"), published)
        prices = gateway["config"]["api"]["prices"]
        prices["input_per_million_usd"] = scenario.api_input_usd_per_million
        prices["output_per_million_usd"] = scenario.api_output_usd_per_million
        context = {**published, "config": gateway["config"]}
        gateway["servers"] = drawn(
            gateway["servers"], plan.get("servers") or {}, _rng(name, "gateway:servers"), context
        )
        context["servers"] = gateway["servers"]
        cases = plan.get("cases") or {}
        unknown = sorted(set(cases) - {c["name"] for c in gateway["cases"]})
        if unknown:
            raise EditionError(f"{EDITIONS_FILE}: gateway.cases.{unknown[0]}: the rubric has no such case")
        gateway["cases"] = [
            drawn(case, cases[case["name"]], _rng(name, f"case:{case['name']}"), context)
            if case["name"] in cases
            else case
            for case in gateway["cases"]
        ]
    except (KeyError, IndexError, TypeError) as exc:
        raise EditionError(f"{EDITIONS_FILE}: a draw names a setting the rubric does not have ({exc})") from None
    except DrawError as exc:
        raise EditionError(f"{EDITIONS_FILE}: edition {name!r}: {exc}") from None
    return out


def edition_numbers(name: str) -> dict[str, Any]:
    """The numbers a solution or a memo could carry from edition `name`, by field: the memo scenario's sizing
    flags (for telling which edition a memo or a code fits)."""
    return memo_scenario(name).sizing_flags()
