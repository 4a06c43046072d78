"""`GET /openapi.json`: an OpenAPI 3.0 description of the endpoints the server really serves.

Written by hand from what `protocol.py` accepts and what `app.py` and `generation.py` answer, so a
fuzzer (schemathesis) can generate requests from it and check the answers against it: every 4xx
and 5xx body is an OpenAI-style error object. Bodies are described as loosely as the server reads
them (unknown fields are ignored, as vLLM ignores them); the constraints listed are the ones the
server enforces with a 400. `/admin/*` is off by default and not described.
"""

from __future__ import annotations

from typing import Any

from starlette.requests import Request
from starlette.responses import JSONResponse, Response

__all__ = ["describe", "openapi_json"]

_JSON = "application/json"


def _ref(name: str) -> dict[str, str]:
    return {"$ref": f"#/components/schemas/{name}"}


def _json(schema: dict[str, Any], description: str) -> dict[str, Any]:
    return {"description": description, "content": {_JSON: {"schema": schema}}}


def _errors(*statuses: int) -> dict[str, Any]:
    words = {
        400: "The body or a field is malformed (the message names the field).",
        404: "The model does not exist.",
        413: "The body is over 16 MiB.",
        429: "Rate limited or the waiting queue is full.",
        500: "The engine failed (a fault, or a crashed step loop).",
        503: "The server is starting up or unhealthy.",
    }
    return {str(s): _json(_ref("ErrorBody"), words[s]) for s in statuses}


_SAMPLING: dict[str, Any] = {
    "model": {"type": "string"},
    "stream": {"type": "boolean"},
    "stream_options": {
        "type": "object",
        "properties": {"include_usage": {"type": "boolean"}, "continuous_usage_stats": {"type": "boolean"}},
    },
    "max_tokens": {"type": "integer", "minimum": 1},
    "n": {"type": "integer", "enum": [1]},
    "temperature": {"type": "number", "minimum": 0, "maximum": 2},
    "top_p": {"type": "number", "minimum": 0, "maximum": 1},
    "presence_penalty": {"type": "number", "minimum": -2, "maximum": 2},
    "frequency_penalty": {"type": "number", "minimum": -2, "maximum": 2},
    "seed": {"type": "integer"},
    "user": {"type": "string"},
    "stop": {"oneOf": [{"type": "string"}, {"type": "array", "items": {"type": "string"}}]},
    "min_tokens": {"type": "integer", "minimum": 0},
    "ignore_eos": {"type": "boolean"},
}

_TEXT_PART = {
    "type": "object",
    "required": ["type", "text"],
    "properties": {"type": {"type": "string", "enum": ["text"]}, "text": {"type": "string"}},
}

_SCHEMAS: dict[str, Any] = {
    "Event": {
        "description": "One server-sent event: `data` is a chunk's JSON, an in-stream error, or `[DONE]`.",
        "type": "object",
        "required": ["data"],
        "properties": {"data": {"type": "string"}, "event": {"type": "string"}},
    },
    "ErrorBody": {
        "type": "object",
        "required": ["error"],
        "properties": {
            "error": {
                "type": "object",
                "required": ["message", "type", "code"],
                "properties": {
                    "message": {"type": "string"},
                    "type": {"type": "string"},
                    "param": {"type": "string", "nullable": True},
                    "code": {"type": "integer"},
                },
            }
        },
    },
    "Message": {
        "type": "object",
        "required": ["role", "content"],
        "properties": {
            "role": {"type": "string", "enum": ["system", "user", "assistant", "tool", "developer", "function"]},
            "content": {"oneOf": [{"type": "string"}, {"type": "array", "items": _TEXT_PART}]},
        },
    },
    "ChatRequest": {
        "type": "object",
        "required": ["messages"],
        "properties": {
            **_SAMPLING,
            "messages": {"type": "array", "minItems": 1, "items": _ref("Message")},
            "max_completion_tokens": {"type": "integer", "minimum": 1},
        },
    },
    "CompletionRequest": {
        "type": "object",
        "required": ["prompt"],
        "properties": {**_SAMPLING, "prompt": {"type": "string", "minLength": 1}},
    },
    "TokenizeRequest": {
        "type": "object",
        "anyOf": [{"required": ["prompt"]}, {"required": ["messages"]}],
        "properties": {
            "model": {"type": "string"},
            "prompt": {"type": "string"},
            "messages": {"type": "array", "minItems": 1, "items": _ref("Message")},
            "return_token_strs": {"type": "boolean"},
        },
    },
    "Completion": {
        "type": "object",
        "required": ["id", "object", "model", "choices"],
        "properties": {
            "id": {"type": "string"},
            "object": {"type": "string"},
            "model": {"type": "string"},
            "choices": {"type": "array", "items": {"type": "object"}},
            "usage": {"type": "object"},
        },
    },
}


def _generation(request: str, summary: str) -> dict[str, Any]:
    return {
        "post": {
            "summary": summary,
            "requestBody": {"required": True, "content": {_JSON: {"schema": _ref(request)}}},
            "responses": {
                "200": {
                    "description": "The answer: JSON, or server-sent events when `stream` is true.",
                    "content": {
                        _JSON: {"schema": _ref("Completion")},
                        "text/event-stream": {"schema": _ref("Event")},
                    },
                },
                **_errors(400, 404, 413, 429, 500, 503),
            },
        }
    }


def describe(title: str = "fake vLLM server", version: str = "1") -> dict[str, Any]:
    """The OpenAPI document (a fresh dict each time: callers may change it)."""
    return {
        "openapi": "3.0.3",
        "info": {"title": title, "version": version},
        "paths": {
            "/health": {
                "get": {
                    "summary": "200 when serving, 503 while starting or unhealthy; no body.",
                    "responses": {"200": {"description": "Healthy."}, "503": {"description": "Not serving."}},
                }
            },
            "/version": {
                "get": {
                    "summary": "The server's version.",
                    "responses": {
                        "200": _json(
                            {"type": "object", "required": ["version"], "properties": {"version": {"type": "string"}}},
                            "Version.",
                        )
                    },
                }
            },
            "/v1/models": {
                "get": {
                    "summary": "The served models, with max_model_len.",
                    "responses": {
                        "200": _json(
                            {
                                "type": "object",
                                "required": ["object", "data"],
                                "properties": {"data": {"type": "array"}},
                            },
                            "Model list.",
                        )
                    },
                }
            },
            "/metrics": {
                "get": {
                    "summary": "Prometheus text, vLLM's metric names.",
                    "responses": {
                        "200": {"description": "Metrics.", "content": {"text/plain": {"schema": {"type": "string"}}}}
                    },
                }
            },
            "/tokenize": {
                "post": {
                    "summary": "Count the tokens of a prompt or chat.",
                    "requestBody": {"required": True, "content": {_JSON: {"schema": _ref("TokenizeRequest")}}},
                    "responses": {
                        "200": _json(
                            {
                                "type": "object",
                                "required": ["count", "tokens"],
                                "properties": {"count": {"type": "integer"}},
                            },
                            "Token count and ids.",
                        ),
                        **_errors(400, 404, 413),
                    },
                }
            },
            "/v1/chat/completions": _generation("ChatRequest", "Chat completion, streamed or whole."),
            "/v1/completions": _generation("CompletionRequest", "Text completion, streamed or whole."),
        },
        "components": {"schemas": _SCHEMAS},
    }


async def openapi_json(request: Request) -> Response:
    return JSONResponse(describe())
