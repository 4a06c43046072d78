"""The reference load generator: streamed chat completions at bounded concurrency, measured honestly.

Run it as `python -m loadgen --base-url ... --model ... --requests N --concurrency C
--prompt-tokens P --max-tokens M --output results.json` from the folder that holds this package.

Modules, one job each:

    config.py       LoadConfig and Timeouts: the run's settings, every default in one place
    prompts.py      prompt text of about P tokens, different for every request
    sse.py          SSEDecoder: text/event-stream bytes -> events, whatever the framing
    stream.py       StreamTracker: a chat-completion stream's events -> TTFT, tokens, outcome
    client.py       send_one(): one streamed request over HTTP -> RequestResult
    runner.py       run_load(): N requests, at most C in flight: C workers, one warm connection each
    percentiles.py  nearest-rank percentiles with their n
    results.py      RequestResult, RunResult and the contract's results file
    report.py       the table printed on stdout
    cli.py          the command line (parses flags, calls run_load, writes, prints)
"""

from .config import LoadConfig, Timeouts
from .percentiles import Percentiles, nearest_rank, percentiles
from .results import RequestResult, RunResult
from .runner import run_load
from .sse import SSEDecoder, SSEEvent

__all__ = [
    "LoadConfig",
    "Timeouts",
    "run_load",
    "RequestResult",
    "RunResult",
    "Percentiles",
    "nearest_rank",
    "percentiles",
    "SSEDecoder",
    "SSEEvent",
]
