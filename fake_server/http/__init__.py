"""The HTTP surface: what a client sees, in vLLM's wire format.

`app.py` is the Starlette app; `protocol.py` reads and checks a request body; `generation.py`
hands it to an engine and `streaming.py` / `wire.py` / `sse.py` write the answer chunk by chunk as
vLLM does. `api_persona.py` is the hosted API's auth, prices and rate limits; `admin.py` serves
`control.py`'s run-time controls over `/admin/*`; `openapi.py` describes it all.
"""
