"""Reading requests: what real clients send to vLLM, checked field by field.

Anything wrong becomes `BadRequest` with a message naming the field; nothing a client sends can
reach the engine unchecked or turn into a 5xx. Fields vLLM accepts but that cannot change what the
fake produces (temperature, top_p, logit_bias, user, ...) are type-checked when they are common,
and otherwise ignored, as vLLM ignores unknown fields.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from typing import Any

__all__ = ["MAX_BODY_BYTES", "BadRequest", "GenerationRequest", "parse_chat", "parse_completion", "parse_json"]

MAX_BODY_BYTES = 16 * 1024 * 1024
_ROLES = {"system", "user", "assistant", "tool", "developer", "function"}


class BadRequest(Exception):
    def __init__(self, message: str, param: str | None = None, status: int = 400) -> None:
        super().__init__(message)
        self.message = message
        self.param = param
        self.status = status


@dataclass
class GenerationRequest:
    model: str | None
    stream: bool
    max_tokens: int | None
    include_usage: bool
    continuous_usage: bool
    ignore_eos: bool
    stop: tuple[str, ...]
    seed: int | None
    min_tokens: int
    messages: list[dict[str, Any]] | None = None
    prompt: str | list[int] | None = None


def parse_json(raw: bytes) -> dict[str, Any]:
    if not raw.strip():
        raise BadRequest("The request body is empty; expected a JSON object.")
    try:
        data = json.loads(raw)
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise BadRequest(f"The request body is not valid JSON: {exc}") from None
    except RecursionError:
        raise BadRequest("The request body is nested too deeply.") from None
    except ValueError as exc:  # e.g. an integer with more digits than Python will convert
        raise BadRequest(f"The request body has a value that cannot be read: {exc}") from None
    if not isinstance(data, dict):
        raise BadRequest(f"The request body must be a JSON object, not {type(data).__name__}.")
    try:
        json.dumps(data, ensure_ascii=False).encode("utf-8")
    except UnicodeEncodeError:
        raise BadRequest("The request body contains text that is not valid Unicode (a lone surrogate).") from None
    except (RecursionError, ValueError):
        raise BadRequest("The request body is nested too deeply.") from None
    return data


def _is_int(v: Any) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def _is_number(v: Any) -> bool:
    return (isinstance(v, (int, float)) and not isinstance(v, bool)) and math.isfinite(v)


def _opt_int(data: dict[str, Any], key: str, minimum: int) -> int | None:
    value = data.get(key)
    if value is None:
        return None
    if not _is_int(value):
        raise BadRequest(f"`{key}` must be an integer, got {json.dumps(value)}.", key)
    if value < minimum:
        raise BadRequest(f"{key} must be at least {minimum}, got {value}.", key)
    return int(value)


def _opt_bool(data: dict[str, Any], key: str) -> bool:
    value = data.get(key)
    if value is None:
        return False
    if not isinstance(value, bool):
        raise BadRequest(f"`{key}` must be true or false, got {json.dumps(value)}.", key)
    return value


def _check_number(data: dict[str, Any], key: str, lo: float, hi: float) -> None:
    value = data.get(key)
    if value is None:
        return
    if not _is_number(value) or not lo <= value <= hi:
        raise BadRequest(f"`{key}` must be a number between {lo} and {hi}, got {json.dumps(value)}.", key)


def _common(data: dict[str, Any], max_key: str) -> GenerationRequest:
    model = data.get("model")
    if model is not None and not isinstance(model, str):
        raise BadRequest(f"`model` must be a string, got {json.dumps(model)}.", "model")
    stream = _opt_bool(data, "stream")
    options = data.get("stream_options")
    if options is not None:
        if options and not stream:  # vLLM lets an empty object through
            raise BadRequest("Stream options can only be defined when `stream=True`.", "stream_options")
        if not isinstance(options, dict):
            raise BadRequest("`stream_options` must be an object.", "stream_options")
    options = options if isinstance(options, dict) else {}
    include_usage = _opt_bool(options, "include_usage")
    continuous = _opt_bool(options, "continuous_usage_stats")
    max_tokens = _opt_int(data, max_key, 1)
    if max_key == "max_completion_tokens" and max_tokens is None:
        max_tokens = _opt_int(data, "max_tokens", 1)
    elif max_tokens is None:
        max_tokens = _opt_int(data, "max_completion_tokens", 1)
    n = _opt_int(data, "n", 1)
    if n is not None and n != 1:
        raise BadRequest(f"The fake server generates one choice per request; got n={n}.", "n")
    _check_number(data, "temperature", 0.0, 2.0)
    _check_number(data, "top_p", 0.0, 1.0)
    _check_number(data, "presence_penalty", -2.0, 2.0)
    _check_number(data, "frequency_penalty", -2.0, 2.0)
    seed = data.get("seed")
    if seed is not None and not _is_int(seed):
        raise BadRequest(f"`seed` must be an integer, got {json.dumps(seed)}.", "seed")
    user = data.get("user")
    if user is not None and not isinstance(user, str):
        raise BadRequest("`user` must be a string.", "user")
    stop = data.get("stop")
    if stop is None:
        stops: tuple[str, ...] = ()
    elif isinstance(stop, str):
        stops = (stop,) if stop else ()
    elif isinstance(stop, list) and all(isinstance(s, str) for s in stop):
        stops = tuple(s for s in stop if s)
    else:
        raise BadRequest("`stop` must be a string or a list of strings.", "stop")
    min_tokens = _opt_int(data, "min_tokens", 0) or 0
    if max_tokens is not None and min_tokens > max_tokens:
        raise BadRequest(
            f"min_tokens must be less than or equal to max_tokens={max_tokens}, got {min_tokens}.", "min_tokens"
        )
    return GenerationRequest(
        model=model,
        stream=stream,
        max_tokens=max_tokens,
        include_usage=include_usage,
        continuous_usage=continuous,
        ignore_eos=_opt_bool(data, "ignore_eos"),
        stop=stops,
        seed=seed,
        min_tokens=min_tokens,
    )


def parse_chat(data: dict[str, Any]) -> GenerationRequest:
    req = _common(data, "max_completion_tokens")
    messages = data.get("messages")
    if messages is None:
        raise BadRequest("`messages` is required.", "messages")
    if not isinstance(messages, list) or not messages:
        raise BadRequest("`messages` must be a non-empty list of messages.", "messages")
    for i, message in enumerate(messages):
        where = f"messages[{i}]"
        if not isinstance(message, dict):
            raise BadRequest(f"`{where}` must be an object with `role` and `content`.", where)
        role = message.get("role")
        if role not in _ROLES:
            raise BadRequest(
                f"`{where}.role` must be one of {', '.join(sorted(_ROLES))}, got {json.dumps(role)}.", f"{where}.role"
            )
        content = message.get("content")
        if content is None or isinstance(content, str):
            continue
        if not isinstance(content, list):
            raise BadRequest(f"`{where}.content` must be a string or a list of content parts.", f"{where}.content")
        for j, part in enumerate(content):
            if not isinstance(part, dict) or part.get("type") != "text" or not isinstance(part.get("text"), str):
                raise BadRequest(
                    f'`{where}.content[{j}]` must be a text part: {{"type": "text", "text": "..."}} (the fake model reads text only).',
                    f"{where}.content",
                )
    req.messages = messages
    return req


def parse_completion(data: dict[str, Any]) -> GenerationRequest:
    req = _common(data, "max_tokens")
    if "max_tokens" not in data and "max_completion_tokens" not in data:
        req.max_tokens = 16  # vLLM's CompletionRequest default; chat defaults to the rest of the context
    prompt = data.get("prompt")
    if isinstance(prompt, list) and len(prompt) == 1 and isinstance(prompt[0], (str, list)):
        prompt = prompt[0]
    if isinstance(prompt, str) and prompt:
        req.prompt = prompt
    elif isinstance(prompt, list) and prompt and all(_is_int(t) and t >= 0 for t in prompt):
        req.prompt = list(prompt)
    elif prompt is None:
        raise BadRequest("`prompt` is required.", "prompt")
    elif prompt == "":
        raise BadRequest("`prompt` cannot be empty.", "prompt")
    else:
        raise BadRequest(
            "`prompt` must be a string, a list of token ids, or a list holding one of those "
            "(the fake server serves one prompt per request).",
            "prompt",
        )
    return req
