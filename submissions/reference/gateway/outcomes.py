"""What one attempt on a route can come to, as the router sees it.

    Reply        a whole answer for the client: a 200 body, or the route's 4xx passed through
    Relay        a stream whose first event is in hand; from here on the route is committed
    RouteFailed  nothing reached the client, so another route may try (5xx, timeout, refused, ...)

The line between RouteFailed and Relay is the rule "fall back before the first byte reaches the
client, never after": a route returns a Relay only once it holds a first event to send.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Any, Literal

__all__ = ["FailureKind", "Relay", "Reply", "RouteFailed", "error_body", "error_reply"]

FailureKind = Literal["status", "timeout", "connection", "stream"]


@dataclass(frozen=True)
class Reply:
    status: int
    body: bytes
    media_type: str = "application/json"
    headers: dict[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class Relay:
    events: AsyncIterator[bytes]  # the first event first; ends with [DONE], or with an error event and no [DONE]


class RouteFailed(Exception):
    """An attempt that failed before its first byte reached the client."""

    def __init__(self, kind: FailureKind, detail: str, cost_usd: float = 0.0) -> None:
        super().__init__(detail)
        self.kind = kind
        self.detail = detail
        self.cost_usd = cost_usd  # what the failed attempt was billed anyway (an API stream cut half-way)


def error_body(message: str, type_: str, code: int | str | None = None, param: str | None = None) -> dict[str, Any]:
    """The OpenAI error shape every client already parses."""
    return {"error": {"message": message, "type": type_, "param": param, "code": code}}


def error_reply(status: int, message: str, type_: str, code: int | str | None = None,
                param: str | None = None) -> Reply:
    return Reply(status, json.dumps(error_body(message, type_, code, param)).encode())
