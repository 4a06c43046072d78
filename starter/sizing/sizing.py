"""Sizing arithmetic. YOURS TO WRITE: this skeleton reads every flag and prints them back, with nothing worked out.

Contract (TASK.md, ../schemas/contract/README.md, ../schemas/contract/sizing-output.schema.json): every price,
utilisation, throughput and load is a flag; exactly one JSON object on stdout; a missing, unknown or
out-of-range flag exits non-zero with a message on stderr. The output still lacks every field after `inputs`:
peak_output_tokens_per_s, per_stream_output_tokens_per_s, replicas_for_load, replicas,
cost_per_million_output_tokens, monthly_cost, cost_per_chat_usd, chats_per_month, api, kv_cache, batch_hours.
"""

from __future__ import annotations

import argparse
import json
import sys


def parse(argv: list[str]) -> argparse.Namespace:
    # TODO: the contract's required flags (marked REQUIRED) must exit non-zero when missing, and every value's
    # range must be checked, not only its type. The skeleton accepts anything so that it runs bare.
    p = argparse.ArgumentParser(description="Size a self-hosted LLM deployment against an API.")
    p.add_argument("--throughput", type=float, help="REQUIRED; one replica's output tokens/s, aggregate")
    p.add_argument("--concurrency", type=int, help="REQUIRED; streams in flight at that throughput")
    p.add_argument("--gpu-hour-usd", type=float, action="append", help="REQUIRED; repeatable")
    p.add_argument("--utilisation", type=float, action="append", help="REQUIRED; repeatable, 0 < U <= 1")
    p.add_argument("--gpus-per-replica", type=int, default=1)
    p.add_argument("--chats-per-day", type=int, help="REQUIRED")
    p.add_argument("--turns-per-chat", type=int, help="REQUIRED")
    p.add_argument("--output-tokens-per-turn", type=int, help="REQUIRED")
    p.add_argument("--input-tokens-per-turn", type=int, help="REQUIRED")
    p.add_argument("--active-hours", type=float, help="REQUIRED")
    p.add_argument("--peak-factor", type=float, help="REQUIRED")
    p.add_argument("--min-replicas", type=int, default=2)
    p.add_argument("--hours-per-month", type=float, default=720.0)
    p.add_argument("--api-input-usd-per-million", type=float, help="REQUIRED")
    p.add_argument("--api-output-usd-per-million", type=float, help="REQUIRED")
    p.add_argument("--gpu-memory-gb", type=float, help="REQUIRED")
    p.add_argument("--gpu-memory-utilization", type=float, default=0.92)
    p.add_argument("--weights-gb", type=float, help="REQUIRED; the replica's weights, all its GPUs together")
    p.add_argument("--overhead-gb", type=float, help="REQUIRED; non-KV memory on each GPU")
    p.add_argument("--kv-bytes-per-token", type=int, help="REQUIRED; at 16 bits")
    p.add_argument("--kv-cache-dtype", choices=["auto", "fp8", "fp8_e4m3", "fp8_e5m2"], default="auto")
    p.add_argument("--context-tokens", type=int, help="REQUIRED")
    p.add_argument("--batch-output-tokens", type=int, default=None)
    return p.parse_args(argv)


def main() -> None:
    inputs = vars(parse(sys.argv[1:]))
    # TODO: work out every output field from `inputs`.
    print("sizing.py: the arithmetic is not written yet (TODO)", file=sys.stderr)
    print(json.dumps({"contract": 4, "inputs": inputs}))


if __name__ == "__main__":
    main()
