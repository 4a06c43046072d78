"""Load generator. YOURS TO WRITE: this skeleton parses the contract's flags and writes an empty result.

Contract (TASK.md, ../schemas/contract/loadgen-results.schema.json):
    python loadgen/loadgen.py --base-url URL --model NAME --requests N --concurrency C \
        --prompt-tokens P --max-tokens M --output FILE [--api-key KEY] [--timeout-s T]

`percentile` below is named in submission.yaml (`loadgen.percentile: loadgen.loadgen:percentile`):
the grader swaps wrong methods in for it while your tests run, so your summary must call it and
your percentile tests must test it. Move it if you like, and keep submission.yaml true.
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Sequence


def percentile(values: Sequence[float], p: float) -> float | None:
    """The p-th percentile (0 < p <= 100) of `values` (in any order) by nearest rank:
    rank = ceil(p/100 * n), 1-based, on the values sorted ascending; None when there are none."""
    raise NotImplementedError("TODO: nearest-rank percentile")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--base-url", required=True)
    parser.add_argument("--model", required=True)
    parser.add_argument("--requests", type=int, required=True)
    parser.add_argument("--concurrency", type=int, required=True)
    parser.add_argument("--prompt-tokens", type=int, required=True)
    parser.add_argument("--max-tokens", type=int, required=True)
    parser.add_argument("--output", required=True)
    parser.add_argument("--api-key", default=None)
    parser.add_argument("--timeout-s", type=float, default=600.0)
    args = parser.parse_args()
    # TODO: send args.requests streaming chat completions, at most args.concurrency at a time, and
    # measure each one (TTFT, output tokens, TPS, outcome), giving up on one args.timeout_s seconds after
    # sending it. Each prompt holds args.prompt_tokens tokens of text. Nothing is sent yet.
    empty = {"n": 0, "p50": None, "p90": None, "p99": None, "max": None, "p99_is_max": True}
    result = {
        "contract": 4,
        "config": {"base_url": args.base_url, "model": args.model, "requests": args.requests,
                   "concurrency": args.concurrency, "prompt_tokens": args.prompt_tokens, "max_tokens": args.max_tokens},
        "requests": [],
        "summary": {"n": 0, "ok": 0, "empty": 0, "failed": 0, "ttft_s": empty, "tps": dict(empty),
                    "output_tokens": 0, "wall_s": 0.0, "throughput_tokens_per_s": 0.0},
    }
    with open(args.output, "w", encoding="utf-8") as f:
        json.dump(result, f, indent=2)
    print("loadgen skeleton: no requests sent (TODO)")


if __name__ == "__main__":
    main()
