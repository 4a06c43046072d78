"""The engine: what a vLLM replica does with requests, step by step, with no HTTP in sight.

`scheduler.py` decides each step (admit, chunked prefill, decode, preempt, finish) from a number
it is given for the time; `step_loop.py` runs it on a clock (`clock.py`, `timers.py`), passes the
tokens through the output stage (`output.py`, `textgen.py`) and publishes what happens to each
sequence (`sequence.py`) as lifecycle events (`events.py`) for the ledger (`recorder.py`,
`ledger.py`) and the metrics (`metrics.py`). `kv_cache.py` holds the blocks and the prefix cache,
`faults.py` the fault plane, `state.py` one server's engines, faults and ledger together.
"""
