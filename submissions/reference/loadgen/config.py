"""The settings of one run: the contract's flags plus timeouts. Defaults live here and only here."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

__all__ = ["LoadConfig", "Timeouts"]


@dataclass(frozen=True)
class Timeouts:
    """How long a request may take before it is a `timeout` failure.

    `read_s` bounds every silence, including the wait for response headers (a first-byte timeout)
    and the gaps between body reads; `request_s` bounds the whole request. The defaults are loose
    on purpose: a loaded server's queue is part of what a load test measures, not an error.
    """

    connect_s: float = 10.0
    read_s: float = 60.0
    request_s: float = 600.0


@dataclass(frozen=True)
class LoadConfig:
    """One load test: what to send, how much of it and how many at once."""

    base_url: str  # the OpenAI base, e.g. http://127.0.0.1:8000/v1
    model: str
    requests: int
    concurrency: int
    prompt_tokens: int
    max_tokens: int
    api_key: str | None = None
    seed: int = 0  # picks the prompt words; the same seed sends the same prompts
    timeouts: Timeouts = field(default_factory=Timeouts)

    @property
    def chat_url(self) -> str:
        return self.base_url.rstrip("/") + "/chat/completions"

    def to_contract(self) -> dict[str, Any]:
        """The results file's `config` object (the contract's flags, nothing else)."""
        return {
            "base_url": self.base_url,
            "model": self.model,
            "requests": self.requests,
            "concurrency": self.concurrency,
            "prompt_tokens": self.prompt_tokens,
            "max_tokens": self.max_tokens,
        }
