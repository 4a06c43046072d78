"""vLLM's wire format: streamed chunks, whole responses and error bodies, byte for byte.

Chunks are written from per-request templates (the id, `created` and model never change within a
stream), so a token costs one JSON string escape. Field order and the `null`s follow what vLLM's
pydantic models serialise: a content chunk is
`{"index":0,"delta":{"content":"…"},"logprobs":null,"finish_reason":null}`, the last token's chunk
carries the `finish_reason` and `stop_reason`, and the usage chunk has `choices: []`.
"""

from __future__ import annotations

import json
from typing import Any

__all__ = ["DONE", "ChatEncoder", "CompletionEncoder", "context_length_message", "error_body"]

DONE = b"data: [DONE]\n\n"
_dumps = json.JSONEncoder(ensure_ascii=False, separators=(",", ":")).encode

_ERROR_TYPES = {
    400: "BadRequestError",
    401: "AuthenticationError",
    403: "PermissionDeniedError",
    404: "NotFoundError",
    408: "RequestTimeoutError",
    409: "ConflictError",
    413: "RequestEntityTooLargeError",
    422: "UnprocessableEntityError",
    429: "RateLimitError",
    500: "InternalServerError",
    502: "BadGatewayError",
    503: "ServiceUnavailableError",
    504: "GatewayTimeoutError",
}


def error_body(status: int, message: str, param: str | None = None, type_: str | None = None) -> dict[str, Any]:
    """An OpenAI-style error object, as vLLM answers it."""
    return {
        "error": {
            "message": message,
            "type": type_ or _ERROR_TYPES.get(status, "APIError"),
            "param": param,
            "code": status,
        }
    }


def context_length_message(profile: str, max_model_len: int, prompt: int, output: int | None) -> str:
    if output is None:
        return (
            f"This model's maximum context length is {max_model_len} tokens. However, your request has "
            f"{prompt} input tokens. Please reduce the length of the input messages."
        )
    if profile == "legacy":
        return (
            f"This model's maximum context length is {max_model_len} tokens. However, you requested "
            f"{prompt + output} tokens ({prompt} in the messages, {output} in the completion). "
            f"Please reduce the length of the messages or completion."
        )
    return (
        f"This model's maximum context length is {max_model_len} tokens. However, you requested "
        f"{output} output tokens and your prompt contains at least {prompt} input tokens, for a total "
        f"of at least {prompt + output} tokens. Please reduce the length of the input prompt or the "
        f"number of requested output tokens."
    )


class _Encoder:
    def __init__(self, id_: str, object_: str, created: int, model: str) -> None:
        head = f'data: {{"id":{_dumps(id_)},"object":"{object_}","created":{created},"model":{_dumps(model)},'
        self._head = head
        self._choices = head + '"choices":[{"index":0,'

    def usage(self, usage: dict[str, Any]) -> bytes:
        return f'{self._head}"choices":[],"usage":{_dumps(usage)}}}\n\n'.encode()

    @staticmethod
    def error(status: int, message: str) -> bytes:
        return b"data: " + _dumps(error_body(status, message)).encode() + b"\n\n"


class ChatEncoder(_Encoder):
    """Chunks of one `/v1/chat/completions` stream."""

    def __init__(self, id_: str, created: int, model: str, profile: str) -> None:
        super().__init__(id_, "chat.completion.chunk", created, model)
        self._reasoning_key = "reasoning_content" if profile == "legacy" else "reasoning"

    def role(self, usage: str = "") -> bytes:
        return f'{self._choices}"delta":{{"role":"assistant","content":""}},"logprobs":null,"finish_reason":null}}]{usage}}}\n\n'.encode()

    def delta(self, kind: str, text: str, finish: str | None, stop_reason: str | None, usage: str = "") -> bytes:
        key = "content" if kind == "content" else self._reasoning_key
        tail = (
            ',"finish_reason":null}]'
            if finish is None
            else f',"finish_reason":"{finish}","stop_reason":{_dumps(stop_reason)}}}]'
        )
        return f'{self._choices}"delta":{{"{key}":{_dumps(text)}}},"logprobs":null{tail}{usage}}}\n\n'.encode()


class CompletionEncoder(_Encoder):
    """Chunks of one `/v1/completions` stream (no role chunk; text deltas)."""

    def __init__(self, id_: str, created: int, model: str) -> None:
        super().__init__(id_, "text_completion", created, model)

    def delta(self, kind: str, text: str, finish: str | None, stop_reason: str | None, usage: str = "") -> bytes:
        fin = "null" if finish is None else f'"{finish}"'
        return f'{self._choices}"text":{_dumps(text)},"logprobs":null,"finish_reason":{fin},"stop_reason":{_dumps(stop_reason)}}}]{usage}}}\n\n'.encode()


def continuous_usage(prompt: int, completion: int) -> str:
    """The `,"usage":{…}` suffix that `continuous_usage_stats` adds to every chunk (no details, as vLLM)."""
    return (
        f',"usage":{{"prompt_tokens":{prompt},"total_tokens":{prompt + completion},"completion_tokens":{completion}}}'
    )


def chat_response(
    id_: str,
    created: int,
    model: str,
    content: str,
    reasoning: str | None,
    profile: str,
    finish: str | None,
    stop_reason: str | None,
    usage: dict[str, Any],
) -> dict[str, Any]:
    message: dict[str, Any] = {
        "role": "assistant",
        "content": content if content or reasoning is None else None,
        "refusal": None,
        "annotations": None,
        "audio": None,
        "function_call": None,
        "tool_calls": [],
    }
    message["reasoning_content" if profile == "legacy" else "reasoning"] = reasoning
    return {
        "id": id_,
        "object": "chat.completion",
        "created": created,
        "model": model,
        "choices": [
            {"index": 0, "message": message, "logprobs": None, "finish_reason": finish, "stop_reason": stop_reason}
        ],
        "service_tier": None,
        "system_fingerprint": None,
        "usage": usage,
        "prompt_logprobs": None,
        "kv_transfer_params": None,
    }


def completion_response(
    id_: str, created: int, model: str, text: str, finish: str | None, stop_reason: str | None, usage: dict[str, Any]
) -> dict[str, Any]:
    return {
        "id": id_,
        "object": "text_completion",
        "created": created,
        "model": model,
        "choices": [
            {
                "index": 0,
                "text": text,
                "logprobs": None,
                "finish_reason": finish,
                "stop_reason": stop_reason,
                "prompt_logprobs": None,
            }
        ],
        "service_tier": None,
        "system_fingerprint": None,
        "usage": usage,
        "kv_transfer_params": None,
    }
