"""How close the reference load generator's TTFT is to the fake server's ledger, by concurrency.

For each concurrency it starts `fake-server serve` (pinned to CPU 0), runs the reference load
generator (`python -m loadgen` in submissions/reference, pinned to CPU 1) with 4× as many requests as
streams (at least 20), and compares each request's TTFT with the ledger's (first content chunk sent − arrival),
matched by response id. Reports p50 / p99 / max of |client − ledger| with n beside them.

    python -m bench.loadgen_ttft            # concurrency 1, 8 and 64
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import click
import httpx

from bench.fidelity import RESULTS, nearest_rank

REFERENCE = Path(__file__).resolve().parent.parent / "submissions" / "reference"


def _pin(cpu: int) -> Callable[[], None] | None:
    if (os.cpu_count() or 1) < 2 or not hasattr(os, "sched_setaffinity"):
        return None
    return lambda: os.sched_setaffinity(0, {cpu})


def measure(concurrency: int, max_tokens: int, token_rate: float) -> dict[str, float | int]:
    server = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "fake_server",
            "serve",
            "--port",
            "0",
            "--admin",
            "--token-rate",
            str(token_rate),
            "--max-num-seqs",
            str(max(concurrency, 8)),
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
        preexec_fn=_pin(0),  # noqa: PLW1509 - one syscall in the child, no lock
    )
    try:
        assert server.stdout is not None
        serving = re.search(r"(http://\S+)", server.stdout.readline())
        assert serving is not None, "the fake server printed no URL"
        url = serving.group(1)
        with tempfile.TemporaryDirectory() as tmp:
            out = Path(tmp) / "results.json"
            start = time.perf_counter()
            subprocess.run(
                [
                    sys.executable,
                    "-m",
                    "loadgen",
                    "--base-url",
                    url + "/v1",
                    "--model",
                    "fake-model",
                    "--requests",
                    str(max(4 * concurrency, 20)),
                    "--concurrency",
                    str(concurrency),
                    "--prompt-tokens",
                    "32",
                    "--max-tokens",
                    str(max_tokens),
                    "--output",
                    str(out),
                ],
                cwd=REFERENCE,
                capture_output=True,
                text=True,
                preexec_fn=_pin(1),
                check=True,
            )
            wall = time.perf_counter() - start
            results = json.loads(out.read_text())
        ledger = {r["id"]: r for r in httpx.get(url + "/admin/ledger?settle=5", timeout=30).json()["records"]}
    finally:
        server.terminate()
        server.wait(10)
    errors = []
    for r in results["requests"]:
        record = ledger.get(r["id"])
        if r["outcome"] == "ok" and record is not None and record["first_content"] is not None:
            errors.append(abs(r["ttft_s"] - (record["first_content"] - record["arrival"])))
    return {
        "concurrency": concurrency,
        "n": len(errors),
        "p50_ms": round(nearest_rank(errors, 50) * 1e3, 3),
        "p99_ms": round(nearest_rank(errors, 99) * 1e3, 3),
        "max_ms": round(max(errors) * 1e3, 3),
        "wall_s": round(wall, 2),
    }


@click.command()
@click.option("--loads", default="1,8,64", show_default=True, help="Comma-separated concurrencies.")
@click.option("--max-tokens", default=32, show_default=True, type=int)
@click.option("--token-rate", default=50.0, show_default=True, type=float)
def main(loads: str, max_tokens: int, token_rate: float) -> None:
    rows = [measure(int(c), max_tokens, token_rate) for c in loads.split(",")]
    command = f"python -m bench.loadgen_ttft --loads {loads} --max-tokens {max_tokens} --token-rate {token_rate:g}"
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / "loadgen_ttft.json").write_text(
        json.dumps({"command": command, "date": time.strftime("%Y-%m-%d"), "rows": rows}, indent=2) + "\n"
    )
    click.echo(
        "| concurrency | n | p50 ms | p99 ms (the max when n < 100) | max ms | wall s |\n|---|---|---|---|---|---|"
    )
    for r in rows:
        click.echo(f"| {r['concurrency']} | {r['n']} | {r['p50_ms']} | {r['p99_ms']} | {r['max_ms']} | {r['wall_s']} |")
    click.echo(f"command: {command}")


if __name__ == "__main__":
    main()
