"""The client's request, read once: the body to forward, and what routing needs from it."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any, Literal

__all__ = ["BadRequest", "ChatRequest", "parse_chat_request"]

Require = Literal["local", "any"]
_GATEWAY_FIELDS = ("require",)  # the gateway's own; never forwarded to a route


class BadRequest(Exception):
    """A request the gateway answers itself with a 400, before any route sees it."""

    def __init__(self, message: str, param: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.param = param


@dataclass(frozen=True)
class ChatRequest:
    body: dict[str, Any]        # what the client sent, minus the gateway's fields; each route sets `model`
    require: Require
    stream: bool
    include_usage: bool         # stream_options.include_usage: the client wants the usage chunk

    @property
    def messages(self) -> Any:
        return self.body.get("messages")

    @property
    def max_tokens(self) -> int | None:
        """The output limit the local server will apply (vLLM prefers max_completion_tokens)."""
        for key in ("max_completion_tokens", "max_tokens"):
            value = self.body.get(key)
            if isinstance(value, int) and not isinstance(value, bool):
                return value
        return None


def parse_chat_request(raw: bytes) -> ChatRequest:
    try:
        body = json.loads(raw)
    except (json.JSONDecodeError, UnicodeDecodeError):
        raise BadRequest("The request body is not valid JSON.") from None
    if not isinstance(body, dict):
        raise BadRequest("The request body must be a JSON object.")
    require = "any" if body.get("require") is None else body["require"]  # null is the default, as left out
    if require not in ("local", "any") or not isinstance(require, str):
        raise BadRequest(f'`require` must be "local" or "any" (got {json.dumps(require)}).', "require")
    stream = body.get("stream", False)
    if not isinstance(stream, bool):
        raise BadRequest(f"`stream` must be true or false (got {json.dumps(stream)}).", "stream")
    options = body.get("stream_options")
    include_usage = isinstance(options, dict) and options.get("include_usage") is True
    forwarded = {k: v for k, v in body.items() if k not in _GATEWAY_FIELDS}
    return ChatRequest(forwarded, require, stream, include_usage)
