"""`POST /v1/chat/completions` and `POST /v1/completions`: from request body to engine to response.

Order of checks, as vLLM does them: body, fields, model (404), start-up (503), context length (400);
then the fault plan, the persona's own admission (the API persona's auth and rate limits), and
the engine. Every request, including rejected ones, gets a ledger record.
"""

from __future__ import annotations

import hashlib
import logging
import time
import zlib
from typing import Any, Protocol

from starlette.requests import ClientDisconnect, Request
from starlette.responses import JSONResponse, Response

from fake_server import tokenizer
from fake_server.engine.faults import FaultRule
from fake_server.engine.ledger import LedgerRecord
from fake_server.engine.sequence import usage_of
from fake_server.engine.state import ServerState
from fake_server.engine.step_loop import EngineFailed, QueueFull
from fake_server.engine.textgen import TextStream
from fake_server.http.protocol import (
    MAX_BODY_BYTES,
    BadRequest,
    GenerationRequest,
    parse_chat,
    parse_completion,
    parse_json,
)
from fake_server.http.streaming import Reply, StreamWriter, collect, stall_before_answer
from fake_server.http.wire import (
    chat_response,
    completion_response,
    context_length_message,
    error_body,
)
from fake_server.settings import ModelSettings

__all__ = ["Persona", "chat_completions", "completions", "error_response"]

_log = logging.getLogger("fake_server")


class Persona(Protocol):
    """What a persona adds around the engine (the local persona adds nothing)."""

    def authenticate(self, request: Request) -> Response | None: ...

    def admit(self, request: Request, record: LedgerRecord, max_tokens: int) -> Response | None: ...

    def headers(self, record: LedgerRecord) -> list[tuple[bytes, bytes]]: ...

    def on_finish(self, record: LedgerRecord) -> None: ...

    def reset(self) -> None: ...


def error_response(
    status: int, message: str, param: str | None = None, headers: dict[str, str] | None = None
) -> JSONResponse:
    return JSONResponse(error_body(status, message, param), status_code=status, headers=headers)


async def _read_body(request: Request) -> bytes:
    declared = request.headers.get("content-length")
    if declared is not None and declared.isdigit() and int(declared) > MAX_BODY_BYTES:
        raise BadRequest(f"The request body is {declared} bytes; the limit is {MAX_BODY_BYTES}.", status=413)
    chunks, size = [], 0
    async for chunk in request.stream():
        size += len(chunk)
        if size > MAX_BODY_BYTES:
            raise BadRequest(f"The request body is over the limit of {MAX_BODY_BYTES} bytes.", status=413)
        chunks.append(chunk)
    return b"".join(chunks)


def _request_id(prefix: str, seed: int, generation: int, number: int, server: str) -> str:
    """A response id unique to this request on this server: the same seed gives two servers (a local route and a
    hosted API, two replicas of a fleet) ids of their own, so a client pairing answers by id never mixes them up."""
    key = f"{server}:{seed}:{generation}:{number}"
    return prefix + hashlib.blake2b(key.encode(), digest_size=16).hexdigest()


async def chat_completions(request: Request) -> Response:
    return await _generate(request, chat=True)


async def completions(request: Request) -> Response:
    return await _generate(request, chat=False)


async def _generate(request: Request, chat: bool) -> Response:
    state: ServerState = request.app.state.server
    arrival = time.perf_counter()
    number = state.next_number()
    generation = state.ledger.open()
    record = LedgerRecord(
        id=_request_id("chatcmpl-" if chat else "cmpl-", state.settings.seed, generation, number, state.identity),
        number=number,
        model="",
        endpoint="chat" if chat else "completions",
        stream=False,
        arrival=time.time(),
        generation=generation,
    )
    try:
        return await _serve(request, state, record, chat, arrival)
    except Exception as exc:  # a bug in the fake, never bad input: still answer and close the record
        _log.exception("fake server error on request %d", number)
        if record.finished is None:
            return _reject(state, record, 500, f"The fake server failed: {type(exc).__name__}: {exc}")
        raise


async def _serve(request: Request, state: ServerState, record: LedgerRecord, chat: bool, arrival: float) -> Response:
    persona: Persona | None = request.app.state.persona
    number = record.number
    if persona is not None:
        denied = persona.authenticate(request)
        if denied is not None:
            return _deny(state, record, denied)
    try:
        raw = await _read_body(request)
        req = (parse_chat if chat else parse_completion)(parse_json(raw))
    except BadRequest as exc:
        return _reject(state, record, exc.status, exc.message, exc.param)
    except ClientDisconnect:
        return _reject(state, record, 499, "The client disconnected before sending the whole body.")
    record.stream = req.stream
    requested = req.model or state.default_model
    record.model = requested
    engine = state.engines.get(requested)
    if engine is None:
        return _reject(state, record, 404, f"The model `{requested}` does not exist.", "model")
    model = engine.name  # vLLM answers with the first served name, whichever alias was asked for
    if state.starting_up():
        return _reject(state, record, 503, "The server is starting up; the model is not loaded yet.")
    settings = engine.settings
    prompt_ids = _prompt(req, chat, settings, record)
    if too_long := _context_problem(settings, len(prompt_ids), req.max_tokens):
        return _reject(state, record, 400, too_long)
    max_tokens = req.max_tokens if req.max_tokens is not None else settings.max_model_len - len(prompt_ids)
    if persona is not None:
        denied = persona.admit(request, record, max_tokens)
        if denied is not None:
            return _deny(state, record, denied)
    fault = state.faults.pick(number, model)
    if fault is not None and fault.kind == "http_error":
        return _fault_error(state, record, fault)
    if fault is not None and fault.kind == "stall_before_headers":
        record.fault = {**fault.describe(), "applied": True}
        if await stall_before_answer(request.receive, fault.seconds):
            return _abandoned(state, record, persona)
    text = TextStream(state.settings.seed, req.seed, zlib.crc32(repr(prompt_ids).encode()))
    try:
        seq = engine.submit(
            record,
            prompt_ids,
            text,
            max_tokens=max_tokens,
            stop=req.stop,
            min_tokens=req.min_tokens,
            ignore_eos=req.ignore_eos,
            reasoning=chat and settings.reasoning,
            role_on_schedule=chat and settings.role_chunk == "on_schedule",
            arrival=arrival,
            fault=fault,
        )
    except QueueFull as exc:
        return _reject(state, record, 429, str(exc), headers={"Retry-After": "1"})
    except EngineFailed as exc:
        return _reject(state, record, 500, str(exc))
    reply = Reply(
        engine,
        seq,
        state.ledger,
        fault,
        chat=chat,
        created=int(record.arrival),
        model=model,
        headers=persona.headers(record) if persona is not None else [],
        on_finish=persona.on_finish if persona is not None else None,
    )
    if req.stream:
        usage = settings.stream_usage or persona is not None  # a server that ignores stream_options sends none
        return StreamWriter(
            reply,
            include_usage=usage and (req.include_usage or persona is not None),  # type: ignore[return-value]
            continuous=usage and req.continuous_usage,
            role_on_arrival=chat and settings.role_chunk == "on_arrival",
        )
    return await _whole(request, reply)


def _context_problem(settings: ModelSettings, prompt_len: int, max_tokens: int | None) -> str | None:
    """vLLM's 400 message when the prompt and max_tokens do not fit the context (none left for an answer)."""
    limit = settings.max_model_len
    if (max_tokens is None and prompt_len >= limit) or (max_tokens is not None and prompt_len + max_tokens > limit):
        return context_length_message(settings.vllm_profile, limit, prompt_len, max_tokens)
    return None


def _prompt(req: GenerationRequest, chat: bool, settings: ModelSettings, record: LedgerRecord) -> list[int]:
    """The prompt's token ids (a chat's through its template), and what the ledger keeps of its length."""
    if chat:
        assert req.messages is not None
        prompt_ids = tokenizer.token_ids(
            tokenizer.tokenize(tokenizer.render_chat(req.messages, settings.default_system_prompt))
        )
    elif isinstance(req.prompt, str):
        prompt_ids = tokenizer.token_ids(tokenizer.tokenize(req.prompt))
    else:
        prompt_ids = list(req.prompt or [])
    record.prompt_tokens = len(prompt_ids)
    record.message_tokens = (
        sum(tokenizer.count(tokenizer.message_text(m.get("content"))) for m in req.messages)
        if chat and req.messages is not None
        else len(prompt_ids)
    )
    record.max_tokens = req.max_tokens
    return prompt_ids


async def _whole(request: Request, reply: Reply) -> Response:
    """A non-streamed answer; in-stream faults map to what a whole response can show."""
    engine, seq, record, fault = reply.engine, reply.seq, reply.record, reply.fault
    stall = 0.0
    if fault is not None and fault.kind in ("stall_after_headers", "stall"):
        record.fault = {**fault.describe(), "applied": True}
        stall = fault.seconds
    still_there, content, reasoning = await collect(engine, seq, request.receive, stall)
    record.finished = time.time()
    fired = fault is not None and seq.fault_fired  # the engine applied it at token `after_tokens`
    if fault is not None and fault.kind in ("cut", "no_done", "stream_error", "malformed_chunk", "engine_crash"):
        record.fault = {**fault.describe(), "applied": fired}
    hdrs = {k.decode(): v.decode() for k, v in reply.headers}
    response: Response
    if seq.error is not None:  # the engine failed under this request
        record.status, record.error = 500, seq.error
        response = error_response(500, seq.error)
    elif fired and fault is not None and fault.kind in ("cut", "no_done"):
        record.error = "connection cut before the response body (fault)"
        response = _CutResponse()
    elif fired and fault is not None and fault.kind == "stream_error":
        record.status = fault.status
        record.error = "engine error (fault)"
        response = error_response(fault.status, fault.message or "The engine failed while generating this response.")
    elif fired and fault is not None and fault.kind == "malformed_chunk":
        response = Response(b'{"id": "broken", "choices": [', media_type="application/json", headers=hdrs)
    else:
        usage = usage_of(seq, engine.settings.enable_prompt_tokens_details)
        if reply.chat:
            body = chat_response(
                record.id,
                reply.created,
                reply.model,
                content,
                reasoning if seq.reasoning_len else None,
                engine.settings.vllm_profile,
                seq.finish_reason,
                seq.stop_reason,
                usage,
            )
        else:
            body = completion_response(
                record.id, reply.created, reply.model, content, seq.finish_reason, seq.stop_reason, usage
            )
        response = JSONResponse(body, headers=hdrs)
    if not still_there and record.error is None:
        record.error = "client disconnected"
    if reply.on_finish is not None:
        reply.on_finish(record)
    reply.ledger.add(record)
    return response


class _CutResponse(Response):
    """Headers promising a body that never comes; the connection is then closed."""

    def __init__(self) -> None:
        super().__init__(b"", status_code=200, media_type="application/json")

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        await send(
            {
                "type": "http.response.start",
                "status": 200,
                "headers": [(b"content-type", b"application/json"), (b"content-length", b"1000")],
            }
        )
        await send({"type": "http.response.body", "body": b'{"id": "', "more_body": True})


def _deny(state: ServerState, record: LedgerRecord, response: Response) -> Response:
    """The persona refused the request (auth, rate limit): record it as it is answered."""
    record.status = response.status_code
    record.error = bytes(response.body).decode("utf-8", "replace")
    record.finished = time.time()
    state.ledger.add(record)
    return response


def _reject(
    state: ServerState,
    record: LedgerRecord,
    status: int,
    message: str,
    param: str | None = None,
    headers: dict[str, str] | None = None,
) -> Response:
    record.status = status
    record.error = message
    record.finished = time.time()
    state.ledger.add(record)
    return error_response(status, message, param, headers)


def _abandoned(state: ServerState, record: LedgerRecord, persona: Persona | None) -> Response:
    """The client left while its answer was held back (a stall before the headers): the record ends at the
    disconnect, as an aborted generation's does (billed for its prompt, no output); nobody reads the answer.
    Its status stays 200, as for any request whose client left: what the ledger says the server answered."""
    record.finish_reason = "abort"
    record.error = "client disconnected"
    record.finished = time.time()
    if persona is not None:
        persona.on_finish(record)
    state.ledger.add(record)
    return Response(status_code=499)


def _fault_error(state: ServerState, record: LedgerRecord, fault: FaultRule) -> Response:
    record.fault = {**fault.describe(), "applied": True}
    headers = None
    if fault.status in (429, 503) or fault.retry_after is not None:
        retry = fault.retry_after if fault.retry_after is not None else 1
        headers = {"Retry-After": f"{retry:g}"}
    default = (
        f"The model `{record.model}` does not exist."
        if fault.status == 404
        else f"Injected fault: HTTP {fault.status}."
    )
    return _reject(
        state, record, fault.status, fault.message or default, "model" if fault.status == 404 else None, headers
    )
