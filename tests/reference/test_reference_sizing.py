"""The reference sizing script, run as the grader runs it: a subprocess from submissions/reference/, flags in, JSON out.

Expected values are arithmetic written out here by hand from the flags (a 27B model on an 80 GB GPU at
595 tokens/s over 16 streams, GPU hours at $2.99 and $6.88); nothing is imported from the script, so a
wrong formula there cannot make its own test pass.
"""

from __future__ import annotations

import json
import math
import subprocess
import sys
from typing import Any

import pytest
from jsonschema import Draft202012Validator
from kit_paths import ROOT

REFERENCE = ROOT / "submissions" / "reference"
SCHEMA = ROOT / "schemas" / "contract" / "sizing-output.schema.json"
COMMAND = [sys.executable, "sizing/sizing.py"]  # the submission.yaml command, run from submissions/reference/

# A worked example: 2,000 chats a day on a 16-stream replica; each figure below is worked from these flags.
WORKED: dict[str, Any] = {
    "throughput": 595,
    "concurrency": 16,
    "gpu-hour-usd": [2.99, 6.88],
    "utilisation": [1.0, 0.25],
    "chats-per-day": 2000,
    "turns-per-chat": 4,
    "output-tokens-per-turn": 300,
    "input-tokens-per-turn": 1500,
    "active-hours": 12,
    "peak-factor": 3,
    "api-input-usd-per-million": 4,
    "api-output-usd-per-million": 20,
    "gpu-memory-gb": 80,
    "weights-gb": 27,
    "overhead-gb": 5,
    "kv-bytes-per-token": 65536,
    "context-tokens": 8192,
    "batch-output-tokens": 1_000_000,
}


def argv(flags: dict[str, Any]) -> list[str]:
    """Flags as the grader appends them; a list value repeats the flag, None leaves it out."""
    out: list[str] = []
    for name, value in flags.items():
        for item in value if isinstance(value, list) else [value]:
            if item is not None:
                out += [f"--{name}", str(item)]
    return out


def run(flags: dict[str, Any] | list[str]) -> subprocess.CompletedProcess[str]:
    args = flags if isinstance(flags, list) else argv(flags)
    return subprocess.run(COMMAND + args, cwd=REFERENCE, capture_output=True, text=True, timeout=60, check=False)


def size(**changes: Any) -> dict[str, Any]:
    """Run with WORKED's flags, some changed; the one JSON object printed."""
    done = run({**WORKED, **changes})
    assert done.returncode == 0, done.stderr
    result: dict[str, Any] = json.loads(done.stdout)  # the contract: one JSON object, nothing else on stdout
    return result


def per_million(result: dict[str, Any], price: float, utilisation: float) -> float:
    [row] = [
        r
        for r in result["cost_per_million_output_tokens"]
        if r["gpu_hour_usd"] == price and r["utilisation"] == utilisation
    ]
    return float(row["usd"])


def monthly(result: dict[str, Any], price: float, replicas: int) -> float:
    [row] = [r for r in result["monthly_cost"] if r["gpu_hour_usd"] == price and r["replicas"] == replicas]
    return float(row["usd"])


def per_chat(result: dict[str, Any], price: float) -> float:
    [row] = [r for r in result["cost_per_chat_usd"] if r["gpu_hour_usd"] == price]
    return float(row["usd"])


# --- the worked example's figures -------------------------------------------------------------------


def test_cost_per_million_output_tokens_busy_and_quarter_busy() -> None:
    result = size()
    assert round(per_million(result, 2.99, 1.0), 2) == 1.40  # 2.99 / (595 x 3,600) x 1e6 = 1.396
    assert round(per_million(result, 2.99, 0.25), 2) == 5.58  # a quarter busy: 1.396 / 0.25 = 5.58


def test_one_stream_at_a_time_implies_42_tokens_per_second_and_costs_fourteen_times_more() -> None:
    # $19.78 per million at $2.99/h and full utilisation means 2.99 / 19.78 million tokens an hour:
    implied = 2.99 / 19.78 * 1e6 / 3600
    assert round(implied, 2) == 41.99  # ~42 output tokens/s with one stream in flight
    one_stream = per_million(size(throughput=42, utilisation=[1.0]), 2.99, 1.0)
    assert round(one_stream, 2) == 19.78
    assert round(one_stream / per_million(size(), 2.99, 1.0)) == 14  # concurrency moves the cost by a factor of 14


def test_one_replica_a_month_at_two_gpu_prices() -> None:
    result = size()
    assert round(monthly(result, 2.99, 1)) == 2153  # 2.99 x 720 hours a month
    assert round(monthly(result, 6.88, 1)) == 4954  # 6.88 x 720
    assert monthly(result, 2.99, 2) == pytest.approx(2 * 2152.8)  # two replicas double it


def test_cost_per_chat_two_replicas_sixty_thousand_chats() -> None:
    result = size()
    assert result["replicas"] == 2 and result["replicas_for_load"] == 1  # the floor of two, for availability
    assert round(per_chat(result, 2.99), 3) == 0.072
    assert per_chat(result, 2.99) == pytest.approx(2 * 2.99 * 720 / 60_000)


def test_one_million_output_tokens_take_28_minutes() -> None:
    assert round(size()["batch_hours"] * 60) == 28  # 1e6 / 595 tokens/s = 1,681 s


@pytest.mark.parametrize(("weights_gb", "tokens", "sequences_at_8k"), [(54, 222_778, 27), (27, 634_765, 77)])
def test_kv_cache_tokens_for_27b_in_bf16_and_fp8(weights_gb: int, tokens: int, sequences_at_8k: int) -> None:
    result = size(**{"weights-gb": weights_gb})
    assert (result["kv_cache"]["tokens"], result["kv_cache"]["sequences_at_context"]) == (tokens, sequences_at_8k)


def test_bf16_holds_less_than_one_native_context_sequence() -> None:
    done = run({**WORKED, "weights-gb": 54, "context-tokens": 262_144})
    assert done.returncode == 0
    kv = json.loads(done.stdout)["kv_cache"]
    assert kv["sequences_at_context"] == 0 and kv["holds_concurrency"] is False


# --- unseen inputs, arithmetic written out here --------------------------------------------------

UNSEEN: dict[str, Any] = {
    "throughput": 1234.5,
    "concurrency": 32,
    "gpu-hour-usd": [1.85, 4.10],
    "utilisation": [0.6, 0.9],
    "gpus-per-replica": 2,
    "chats-per-day": 15000,
    "turns-per-chat": 6,
    "output-tokens-per-turn": 250,
    "input-tokens-per-turn": 2200,
    "active-hours": 10,
    "peak-factor": 4,
    "min-replicas": 2,
    "hours-per-month": 730,
    "api-input-usd-per-million": 3,
    "api-output-usd-per-million": 15,
    "gpu-memory-gb": 141,
    "gpu-memory-utilization": 0.9,
    "weights-gb": 70,
    "overhead-gb": 8,
    "kv-bytes-per-token": 163840,
    "context-tokens": 16384,
    "batch-output-tokens": 5_000_000,
}


def test_unseen_inputs_match_hand_arithmetic() -> None:
    done = run(UNSEEN)
    assert done.returncode == 0, done.stderr
    r = json.loads(done.stdout)
    peak = 15000 * 6 * 250 / (10 * 3600) * 4  # 2,500 output tokens/s
    assert r["peak_output_tokens_per_s"] == pytest.approx(2500)
    assert r["replicas_for_load"] == 3 and r["replicas"] == 3  # 2500 / 1234.5 = 2.03 -> 3, above the floor
    assert peak / 1234.5 == pytest.approx(2.025, abs=1e-3)
    for price in (1.85, 4.10):
        for u in (0.6, 0.9):
            assert per_million(r, price, u) == pytest.approx(price * 2 / (1234.5 * u * 3600 / 1e6), rel=1e-9)
        assert monthly(r, price, 1) == pytest.approx(price * 2 * 730, rel=1e-9)
        assert monthly(r, price, 3) == pytest.approx(price * 2 * 3 * 730, rel=1e-9)
        # one month is --hours-per-month / 24 days: 730 h is 30.4167 days of chats
        assert per_chat(r, price) == pytest.approx(price * 2 * 3 * 730 / (15000 * 730 / 24), rel=1e-9)
    assert per_million(r, 1.85, 0.6) == pytest.approx(1.387577, rel=1e-6)
    assert monthly(r, 1.85, 3) == pytest.approx(8103.0)
    assert r["api"]["cost_per_chat_usd"] == pytest.approx(6 * (2200 * 3 + 250 * 15) / 1e6)  # 0.0621: input billed
    assert r["chats_per_month"] == pytest.approx(15000 * 730 / 24)
    assert r["api"]["monthly_usd"] == pytest.approx(0.0621 * 15000 * 730 / 24)
    assert r["api"]["list_usd_per_million_output_tokens"] == 15
    assert r["api"]["usd_per_million_output_tokens_with_input"] == pytest.approx(0.0621 / (6 * 250) * 1e6)  # 41.4
    assert r["per_stream_output_tokens_per_s"] == pytest.approx(1234.5 / 32)
    # two GPUs, each 141 x 0.9 - 8 overhead, less 70 GB of weights: 167.8 GB / 163,840 B
    assert r["kv_cache"] == {
        "bytes_per_token": 163840,
        "tokens": 1_024_169,
        "sequences_at_context": 62,
        "holds_concurrency": True,
    }
    assert r["batch_hours"] == pytest.approx(5e6 / 1234.5 / 3600, rel=1e-9)


def test_inputs_are_echoed_with_defaults_filled_in() -> None:
    r = size(**{"batch-output-tokens": None})
    assert r["contract"] == 4
    assert r["inputs"]["gpu_hour_usd"] == [2.99, 6.88] and r["inputs"]["utilisation"] == [1.0, 0.25]
    assert r["inputs"]["min_replicas"] == 2 and r["inputs"]["hours_per_month"] == 720
    assert r["inputs"]["gpu_memory_utilization"] == 0.92 and r["inputs"]["gpus_per_replica"] == 1
    assert r["inputs"]["batch_output_tokens"] is None and r["batch_hours"] is None
    assert r["inputs"]["kv_cache_dtype"] == "auto" and r["inputs"]["concurrency"] == 16
    assert set(r) == {
        "contract",
        "inputs",
        "peak_output_tokens_per_s",
        "per_stream_output_tokens_per_s",
        "replicas_for_load",
        "replicas",
        "cost_per_million_output_tokens",
        "monthly_cost",
        "cost_per_chat_usd",
        "chats_per_month",
        "api",
        "kv_cache",
        "batch_hours",
    }


@pytest.mark.parametrize("flags", [WORKED, UNSEEN, {**WORKED, "batch-output-tokens": None, "weights-gb": 140}])
def test_output_follows_the_contract_schema(flags: dict[str, Any]) -> None:
    done = run(flags)
    assert done.returncode == 0, done.stderr
    validator = Draft202012Validator(json.loads(SCHEMA.read_text()))
    assert [e.message for e in validator.iter_errors(json.loads(done.stdout))] == []


def test_load_that_needs_exactly_two_replicas_gets_two() -> None:
    # 24,000 one-turn chats of 150 tokens over 10 h at a 2.2 peak is 220 tok/s, exactly 2 x 110.
    # In binary floats 100 * 2.2 / 110 is 2.0000000000000004, which a plain ceil turns into 3.
    r = size(
        **{
            "throughput": 110,
            "chats-per-day": 24000,
            "turns-per-chat": 1,
            "output-tokens-per-turn": 150,
            "active-hours": 10,
            "peak-factor": 2.2,
            "min-replicas": 1,
        }
    )
    assert r["peak_output_tokens_per_s"] == pytest.approx(220)
    assert r["replicas_for_load"] == 2 and r["replicas"] == 2


def test_kv_budget_that_divides_exactly_is_not_floored_one_short() -> None:
    # 24 GB x 0.95 - 14 - 2 = 6.8 GB = 265,625 x 25,600 bytes; floats give 265,624.9999...
    r = size(
        **{
            "gpu-memory-gb": 24,
            "gpu-memory-utilization": 0.95,
            "weights-gb": 14,
            "overhead-gb": 2,
            "kv-bytes-per-token": 25600,
            "context-tokens": 4096,
        }
    )
    assert (r["kv_cache"]["tokens"], r["kv_cache"]["sequences_at_context"]) == (265_625, 64)


def test_weights_larger_than_the_gpu_leave_no_cache() -> None:
    done = run({**WORKED, "weights-gb": 140})
    assert done.returncode == 0
    kv = json.loads(done.stdout)["kv_cache"]
    assert (kv["tokens"], kv["sequences_at_context"]) == (0, 0)


# --- price, utilisation and throughput are inputs, not constants -----------------------------------


def test_changing_price_utilisation_or_throughput_changes_the_answer() -> None:
    base = size(**{"gpu-hour-usd": [2.99], "utilisation": [0.5]})
    dearer = size(**{"gpu-hour-usd": [5.98], "utilisation": [0.5]})
    busier = size(**{"gpu-hour-usd": [2.99], "utilisation": [1.0]})
    faster = size(**{"gpu-hour-usd": [2.99], "utilisation": [0.5], "throughput": 1190})
    assert per_million(dearer, 5.98, 0.5) == pytest.approx(2 * per_million(base, 2.99, 0.5))
    assert monthly(dearer, 5.98, 2) == pytest.approx(2 * monthly(base, 2.99, 2))
    assert per_chat(dearer, 5.98) == pytest.approx(2 * per_chat(base, 2.99))
    assert per_million(busier, 2.99, 1.0) == pytest.approx(per_million(base, 2.99, 0.5) / 2)
    assert per_million(faster, 2.99, 0.5) == pytest.approx(per_million(base, 2.99, 0.5) / 2)
    assert faster["batch_hours"] == pytest.approx(base["batch_hours"] / 2)


def test_every_price_times_every_utilisation_is_reported_in_order() -> None:
    r = size(**{"gpu-hour-usd": [1.5, 2.5, 3.5], "utilisation": [0.3, 0.7]})
    pairs = [(row["gpu_hour_usd"], row["utilisation"]) for row in r["cost_per_million_output_tokens"]]
    assert pairs == [(1.5, 0.3), (1.5, 0.7), (2.5, 0.3), (2.5, 0.7), (3.5, 0.3), (3.5, 0.7)]
    assert [row["gpu_hour_usd"] for row in r["cost_per_chat_usd"]] == [1.5, 2.5, 3.5]
    assert [(row["gpu_hour_usd"], row["replicas"]) for row in r["monthly_cost"]] == [
        (1.5, 1),
        (1.5, 2),
        (2.5, 1),
        (2.5, 2),
        (3.5, 1),
        (3.5, 2),
    ]


def test_other_loads_hours_and_api_prices_move_their_figures() -> None:
    base = size()
    assert size(**{"chats-per-day": 4000})["peak_output_tokens_per_s"] == pytest.approx(
        2 * base["peak_output_tokens_per_s"]
    )
    assert monthly(size(**{"hours-per-month": 360}), 2.99, 1) == pytest.approx(monthly(base, 2.99, 1) / 2)
    assert size(**{"min-replicas": 3})["replicas"] == 3
    assert size(**{"gpus-per-replica": 2})["cost_per_million_output_tokens"][0]["usd"] == pytest.approx(
        2 * base["cost_per_million_output_tokens"][0]["usd"]
    )
    api = size(**{"api-input-usd-per-million": 8})["api"]
    assert api["cost_per_chat_usd"] == pytest.approx(base["api"]["cost_per_chat_usd"] + 4 * 1500 * 4 / 1e6)


# --- bad flags: exit 2, the flag named, no traceback ---------------------------------------------


@pytest.mark.parametrize(
    ("changes", "flag"),
    [
        ({"throughput": None}, "--throughput"),
        ({"gpu-hour-usd": None}, "--gpu-hour-usd"),
        ({"utilisation": None}, "--utilisation"),
        ({"chats-per-day": None}, "--chats-per-day"),
        ({"kv-bytes-per-token": None}, "--kv-bytes-per-token"),
        ({"utilisation": [1.0, 1.5]}, "--utilisation"),
        ({"utilisation": [0]}, "--utilisation"),
        ({"utilisation": ["nan"]}, "--utilisation"),
        ({"throughput": "fast"}, "--throughput"),
        ({"throughput": "inf"}, "--throughput"),
        ({"throughput": 0}, "--throughput"),
        ({"gpu-hour-usd": [2.99, -1]}, "--gpu-hour-usd"),
        ({"turns-per-chat": 2.5}, "--turns-per-chat"),
        ({"active-hours": 25}, "--active-hours"),
        ({"peak-factor": 0.5}, "--peak-factor"),
        ({"gpu-memory-utilization": 1.2}, "--gpu-memory-utilization"),
        ({"min-replicas": 0}, "--min-replicas"),
    ],
)
def test_a_bad_flag_exits_2_naming_it(changes: dict[str, Any], flag: str) -> None:
    done = run({**WORKED, **changes})
    assert done.returncode == 2
    assert flag in done.stderr
    assert "Traceback" not in done.stderr and done.stdout == ""


def test_all_missing_flags_are_named_at_once() -> None:
    done = run(["--throughput", "595"])
    assert done.returncode == 2 and "Traceback" not in done.stderr
    for flag in ("--gpu-hour-usd", "--utilisation", "--chats-per-day", "--weights-gb", "--context-tokens"):
        assert flag in done.stderr


def test_an_unknown_flag_exits_2() -> None:
    done = run(argv(WORKED) + ["--gpu-price", "3"])
    assert done.returncode == 2 and "--gpu-price" in done.stderr and "Traceback" not in done.stderr


def test_json_has_no_infinities_or_nans_even_at_the_edges() -> None:
    r = size(
        **{
            "api-input-usd-per-million": 0,
            "api-output-usd-per-million": 0,
            "input-tokens-per-turn": 0,
            "utilisation": [1e-6],
            "batch-output-tokens": 0,
        }
    )
    assert r["api"] == {
        "cost_per_chat_usd": 0,
        "list_usd_per_million_output_tokens": 0,
        "usd_per_million_output_tokens_with_input": 0,
        "monthly_usd": 0,
    }
    assert r["batch_hours"] == 0 and math.isfinite(r["cost_per_million_output_tokens"][0]["usd"])


# --- multi-GPU replicas, the fp8 cache, the month and the API's two per-million figures ---------------


@pytest.mark.parametrize(
    ("flags", "tokens"),
    [
        # two 141 GB GPUs at 0.9, 70 GB of weights split over them, 6 GB overhead on each: 171.8 GB of cache
        (
            {
                "gpus-per-replica": 2,
                "gpu-memory-gb": 141,
                "gpu-memory-utilization": 0.9,
                "weights-gb": 70,
                "overhead-gb": 6,
                "kv-bytes-per-token": 163840,
            },
            1_048_583,
        ),
        # the same on one GPU: 126.9 - 76 = 50.9 GB
        (
            {
                "gpus-per-replica": 1,
                "gpu-memory-gb": 141,
                "gpu-memory-utilization": 0.9,
                "weights-gb": 70,
                "overhead-gb": 6,
                "kv-bytes-per-token": 163840,
            },
            310_668,
        ),
        # 240 GB of weights fit four 80 GB GPUs: 4 x (73.6 - 5) - 240 = 34.4 GB
        ({"gpus-per-replica": 4, "weights-gb": 240}, 524_902),
    ],
)
def test_kv_cache_counts_every_gpu_of_a_replica(flags: dict[str, Any], tokens: int) -> None:
    assert size(**flags)["kv_cache"]["tokens"] == tokens


def test_an_fp8_kv_cache_doubles_the_tokens() -> None:
    fp8 = size(**{"kv-cache-dtype": "fp8"})["kv_cache"]
    assert fp8["bytes_per_token"] == 32768 and fp8["tokens"] == 1_269_531  # 41.6e9 / 32,768
    assert fp8["sequences_at_context"] == 154


def test_one_month_is_hours_per_month_over_24_days_everywhere() -> None:
    r = size(**{"hours-per-month": 730})
    assert r["chats_per_month"] == pytest.approx(2000 * 730 / 24)
    assert per_chat(r, 2.99) == pytest.approx(2 * 2.99 * 730 / (2000 * 730 / 24))  # the month cancels out
    assert r["api"]["monthly_usd"] == pytest.approx(0.048 * 2000 * 730 / 24)


def test_the_api_list_price_and_its_price_with_input_are_both_reported() -> None:
    api = size()["api"]
    assert api["list_usd_per_million_output_tokens"] == 20
    assert api["usd_per_million_output_tokens_with_input"] == pytest.approx(40)  # $0.048 over 1,200 output tokens


def test_holds_concurrency_compares_sequences_with_the_concurrency() -> None:
    assert size(concurrency=77)["kv_cache"]["holds_concurrency"] is True
    assert size(concurrency=78)["kv_cache"]["holds_concurrency"] is False
    assert size(concurrency=16)["per_stream_output_tokens_per_s"] == pytest.approx(595 / 16)
