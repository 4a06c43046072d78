"""Timing fidelity and efficiency of the fake server against the naive baseline, in one run.

For each load (concurrent streams at a set token rate) it starts the fake server and then the
naive sleep-per-request server (`bench/naive_server.py`) as subprocesses, drives each with the
same raw load client (`bench/load_client.py`, its own process) and reports:

* gap error: p50/p99 of |gap between consecutive content chunks of a stream - set gap|, from the
  fake server's ledger (send times); for the baseline, which has no ledger, from the client;
* lateness: p99 of (client receive time - ledger send time), the ledger's truthfulness;
* events per server CPU-second: chunks delivered over the server process's CPU time (user+sys),
  which is the "per core" figure since each server is a single-threaded process;
* the server's own step-lag p99 from `/metrics`, so a run that could not keep up says so.

    python -m bench.fidelity                 # full run: 16, 256 and 1,024 streams
    python -m bench.fidelity --quick         # 16 and 128 streams, for a smoke check
Results go to bench/results/fidelity.json and a Markdown table on stdout.
"""

from __future__ import annotations

import json
import math
import os
import platform
import re
import subprocess
import sys
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import click
import httpx

RESULTS = Path(__file__).parent / "results"


def nearest_rank(values: list[float], p: float) -> float:
    ordered = sorted(values)
    if not ordered:
        return math.nan
    return ordered[max(0, math.ceil(p / 100 * len(ordered)) - 1)]


def _cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    ticks = os.sysconf("SC_CLK_TCK")
    return (int(fields[11]) + int(fields[12])) / ticks  # utime + stime


def _pin(cpu: int) -> Any:
    """Keep server and client on their own cores; otherwise the scheduler's wake-up affinity puts
    the client on the server's core mid-burst and the measurement is of the contention."""
    if (os.cpu_count() or 1) < 2 or not hasattr(os, "sched_setaffinity"):
        return None
    return lambda: os.sched_setaffinity(0, {cpu})


def _start(cmd: list[str]) -> tuple[subprocess.Popen[str], str]:
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, preexec_fn=_pin(0))
    assert proc.stdout is not None
    line = proc.stdout.readline()
    match = re.search(r"(http://\S+)", line)
    if not match:
        proc.kill()
        raise RuntimeError(f"server did not start: {line}")
    url = match.group(1)
    for _ in range(200):
        try:
            httpx.post(url + "/v1/chat/completions", json={"model": "fake-model", "messages": [{"role": "user", "content": "warm"}], "max_tokens": 1}, timeout=5)
            break
        except httpx.TransportError:
            time.sleep(0.05)
    return proc, url


def _drive(url: str, streams: int, max_tokens: int) -> list[dict[str, Any]]:
    out = subprocess.run([sys.executable, "-m", "bench.load_client", "--url", url, "--streams", str(streams),
                          "--max-tokens", str(max_tokens)], capture_output=True, text=True, check=True, timeout=600,
                         preexec_fn=_pin(1))
    return json.loads(out.stdout)


@dataclass
class Row:
    server: str
    streams: int
    token_rate: float
    events: int
    cpu_seconds: float
    events_per_cpu_second: float
    gap_error_p50_ms: float
    gap_error_p99_ms: float
    gap_error_p99_all_ms: float
    gap_source: str
    lateness_p99_ms: float | None
    step_lag_p99_ms: float | None
    wall_seconds: float


def _gap_errors(series: list[list[float]], gap: float, since: float = -math.inf) -> list[float]:
    """|gap - set gap| for consecutive chunk times of each stream, counting gaps that start at `since` or later."""
    errors = []
    for times in series:
        errors.extend(abs((b - a) - gap) for a, b in zip(times, times[1:]) if a >= since)
    return errors


def _step_lag_p99(metrics_text: str) -> float | None:
    from prometheus_client.parser import text_string_to_metric_families
    for family in text_string_to_metric_families(metrics_text):
        if family.name == "fake_server:step_lag_seconds":
            buckets = [(float(s.labels["le"]), s.value) for s in family.samples if s.name.endswith("_bucket")]
            total = buckets[-1][1]
            for bound, count in buckets:
                if count >= 0.99 * total:
                    return bound
    return None


def measure_fake(streams: int, rate: float, max_tokens: int, timing: str = "cheap") -> Row:
    # No prefill cost, so every step lasts exactly the set gap and any deviation is the server's error.
    cmd = [sys.executable, "-m", "fake_server", "serve", "--port", "0", "--admin", "--token-rate", str(rate), "--timing", timing,
           "--prefill-overhead", "0", "--prefill-rate", "1000000000",
           "--max-num-seqs", str(max(streams, 256)), "--max-num-batched-tokens", "65536",
           "--kv-cache-tokens", str(max(streams * (max_tokens + 64), 1_000_000))]
    proc, url = _start(cmd)
    try:
        httpx.post(url + "/admin/reset", timeout=10)
        cpu0, t0 = _cpu_seconds(proc.pid), time.perf_counter()
        client = _drive(url, streams, max_tokens)
        wall, cpu = time.perf_counter() - t0, _cpu_seconds(proc.pid) - cpu0
        ledger = httpx.get(url + "/admin/ledger", timeout=60).json()["records"]
        lag = _step_lag_p99(httpx.get(url + "/metrics", timeout=10).text)
    finally:
        proc.terminate()
        proc.wait(10)
    by_id = {r["id"]: r for r in ledger}
    content_series, lateness = [], []
    for stream in client:
        record = by_id.get(stream["id"])
        if record is None:
            continue
        chunks = record["chunks"]
        content_series.append([t for t, kind, _ in chunks if kind == "content"][1:])  # first follows prefill, not a gap
        lateness.extend(rx - c[0] for rx, c in zip(stream["times"], chunks))
    events = sum(len(r["chunks"]) for r in ledger)
    steady = max(s[0] for s in content_series if s)  # every stream is decoding from here on
    errors = _gap_errors(content_series, 1.0 / rate, steady)
    every = _gap_errors(content_series, 1.0 / rate)
    return Row("fake_server", streams, rate, events, round(cpu, 3), round(events / cpu, 1),
               round(nearest_rank(errors, 50) * 1e3, 3), round(nearest_rank(errors, 99) * 1e3, 3),
               round(nearest_rank(every, 99) * 1e3, 3), "ledger",
               round(nearest_rank(lateness, 99) * 1e3, 3), None if lag is None else lag * 1e3, round(wall, 2))


def measure_naive(streams: int, rate: float, max_tokens: int) -> Row:
    proc, url = _start([sys.executable, "-m", "bench.naive_server", "--port", "0", "--token-rate", str(rate)])
    try:
        cpu0, t0 = _cpu_seconds(proc.pid), time.perf_counter()
        client = _drive(url, streams, max_tokens)
        wall, cpu = time.perf_counter() - t0, _cpu_seconds(proc.pid) - cpu0
    finally:
        proc.terminate()
        proc.wait(10)
    events = sum(len(s["times"]) for s in client)
    series = [s["times"][2:-1] for s in client]  # skip role and first token; drop [DONE]
    steady = max(s[0] for s in series if s)
    errors = _gap_errors(series, 1.0 / rate, steady)
    every = _gap_errors(series, 1.0 / rate)
    return Row("naive_baseline", streams, rate, events, round(cpu, 3), round(events / cpu, 1),
               round(nearest_rank(errors, 50) * 1e3, 3), round(nearest_rank(errors, 99) * 1e3, 3),
               round(nearest_rank(every, 99) * 1e3, 3), "client",
               None, None, round(wall, 2))


def timer_lateness(steps: int = 100, period: float = 0.05) -> dict[str, float]:
    """p99 lateness (ms) of plain `asyncio.sleep` and of the engine's precise clock, on an idle loop:
    the floor under every timing figure on this machine."""
    import asyncio

    from fake_server.clock import PreciseClock

    async def run(sleep_until: Any) -> float:
        lags, t = [], time.perf_counter()
        for _ in range(steps):
            t += period
            await sleep_until(t)
            lags.append(time.perf_counter() - t)
        return round(nearest_rank(lags, 99) * 1e3, 3)

    async def plain(deadline: float) -> None:
        await asyncio.sleep(deadline - time.perf_counter())

    return {"asyncio_sleep_p99_ms": asyncio.run(run(plain)), "precise_clock_p99_ms": asyncio.run(run(PreciseClock().sleep_until))}


def table(rows: list[Row]) -> str:
    head = ("| server | streams | tok/s per stream | events | server CPU s | events per CPU-s | gap err p50 ms "
            "| gap err p99 ms | gap err p99 ms, incl. arrivals | from | client-ledger p99 ms | step lag p99 ms | wall s |")
    out = [head, "|" + "---|" * 13]
    for r in rows:
        out.append(f"| {r.server} | {r.streams} | {r.token_rate:g} | {r.events} | {r.cpu_seconds} | {r.events_per_cpu_second} "
                   f"| {r.gap_error_p50_ms} | {r.gap_error_p99_ms} | {r.gap_error_p99_all_ms} | {r.gap_source} | {r.lateness_p99_ms} "
                   f"| {r.step_lag_p99_ms} | {r.wall_seconds} |")
    return "\n".join(out)


@click.command()
@click.option("--quick", is_flag=True, help="Small loads only (a smoke check, not the recorded figures).")
@click.option("--token-rate", default=20.0, type=float, show_default=True, help="Set tokens per second per stream.")
@click.option("--max-tokens", default=40, type=int, show_default=True, help="Tokens per stream.")
@click.option("--loads", default=None, help="Comma-separated stream counts (default 16,256,1024; --quick: 16,128).")
@click.option("--timing", type=click.Choice(["cheap", "precise"]), default="precise", show_default=True,
              help="The fake server's timing mode (precise: the sub-millisecond figures the fidelity targets are about).")
def main(quick: bool, token_rate: float, max_tokens: int, loads: str | None, timing: str) -> None:
    counts = tuple(int(x) for x in loads.split(",")) if loads else (16, 128) if quick else (16, 256, 1024)
    timers = timer_lateness()
    click.echo(f"timer lateness on an idle loop: {timers}", err=True)
    rows: list[Row] = []
    for streams in counts:
        rows.append(measure_fake(streams, token_rate, max_tokens, timing))
        rows.append(measure_naive(streams, token_rate, max_tokens))
        click.echo(table(rows[-2:]).splitlines()[-2], err=True)
        click.echo(table(rows[-1:]).splitlines()[-1], err=True)
    ratios = {}
    for streams in counts:
        fake = next(r for r in rows if r.server == "fake_server" and r.streams == streams)
        naive = next(r for r in rows if r.server == "naive_baseline" and r.streams == streams)
        ratios[str(streams)] = round(fake.events_per_cpu_second / naive.events_per_cpu_second, 2)
    command = ("python -m bench.fidelity" + (" --quick" if quick else "") + (f" --loads {loads}" if loads else "")
               + f" --token-rate {token_rate:g} --max-tokens {max_tokens} --timing {timing}")
    result = {"command": command, "date": time.strftime("%Y-%m-%d"), "machine": f"{platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}",
              "timer_lateness": timers, "rows": [asdict(r) for r in rows], "efficiency_ratio_fake_over_naive": ratios}
    RESULTS.mkdir(exist_ok=True)
    name = "fidelity-quick.json" if quick else "fidelity.json" if timing == "precise" else f"fidelity-{timing}.json"
    (RESULTS / name).write_text(json.dumps(result, indent=2) + "\n")
    click.echo(table(rows))
    click.echo(f"\nevents per CPU-second, fake / naive: {ratios}\ntimer lateness: {timers}\ncommand: {command}")


if __name__ == "__main__":
    main()
