"""Timing fidelity and efficiency of the fake server, in each timing mode, against the naive
baseline, in one run.

For each load (concurrent streams at a set token rate) it starts the fake server once per timing
mode (`auto`, the default: the kernel's high-resolution timer; `loop`: the event loop's timer)
and then the naive sleep-per-request server (`bench/naive_server.py`), each as a subprocess,
drives each with the same raw load client (`bench/load_client.py`, its own process) and reports:

* gap error: p50/p99 of |gap between consecutive content chunks of a stream - set gap|, from the
  fake server's ledger (send times); for the baseline, which has no ledger, from the client;
* the same p99 seen by the client (receive times), for the fake server too;
* lateness: p99 of (client receive time - ledger send time), the ledger's truthfulness;
* events per server CPU-second: chunks delivered over the server process's CPU time (user+sys),
  which is the "per core" figure since each server is a single-threaded process; and the
  server's share of a core over the ledger's span (first arrival to last finish);
* the server's own step-lag p99 from `/metrics`, so a run that could not keep up says so, and the
  step timer it said it used;
* the CPU the rest of the machine used meanwhile (`OtherLoad`); a measurement during which it
  was above BUSY_LIMIT is taken again once the machine is quiet (up to five times in all,
  `attempts`).

    python -m bench.fidelity                 # full run: 16, 256 and 1,024 streams, both modes
    python -m bench.fidelity --quick         # 16 and 128 streams, for a smoke check
Results go to bench/results/fidelity.json and a Markdown table on stdout.
"""

from __future__ import annotations

import itertools
import json
import math
import os
import platform
import re
import resource
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import click
import httpx

from bench import results_dir

RESULTS = results_dir()


def nearest_rank(values: list[float], p: float) -> float:
    ordered = sorted(values)
    if not ordered:
        return math.nan
    return ordered[max(0, math.ceil(p / 100 * len(ordered)) - 1)]


def _cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    ticks = os.sysconf("SC_CLK_TCK")
    return (int(fields[11]) + int(fields[12])) / ticks  # utime + stime


class OtherLoad:
    """The CPU the rest of the machine used over a measurement, in % of one core: every core's
    busy time (/proc/stat) minus the server's and this process's and its finished children's
    (the load client). A figure measured while this was high saw a shared machine."""

    def __init__(self, server_pid: int) -> None:
        self.server_pid = server_pid
        self.start = self._readings()

    def _readings(self) -> tuple[float, float, float, float]:
        busy = _busy_seconds()
        own = sum(
            getattr(resource.getrusage(who), f)
            for who in (resource.RUSAGE_SELF, resource.RUSAGE_CHILDREN)
            for f in ("ru_utime", "ru_stime")
        )
        return busy, _cpu_seconds(self.server_pid), own, time.perf_counter()

    def percent(self) -> float:
        end = self._readings()
        busy, server, own, wall = (b - a for a, b in zip(self.start, end))
        return round(100 * max(0.0, busy - server - own) / wall, 1)


BUSY_LIMIT = 10.0  # % of a core used elsewhere above which a measurement is taken again
TRIES = 5  # measurements of one row at most, while the rest of the machine is busy


def _busy_seconds() -> float:
    """Every core's busy time so far, from /proc/stat."""
    fields = [int(x) for x in Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:9]]
    user, nice, system, _idle, _iowait, irq, softirq, steal = fields
    return (user + nice + system + irq + softirq + steal) / os.sysconf("SC_CLK_TCK")


def wait_for_quiet(busy_limit: float = BUSY_LIMIT, window: float = 10.0, timeout: float = 900.0) -> float:
    """Wait until the machine used at most `busy_limit`% of a core over a `window` (nothing of this
    benchmark runs meanwhile), or `timeout` seconds; the last window's figure."""
    deadline = time.monotonic() + timeout
    while True:
        before = _busy_seconds()
        time.sleep(window)
        busy = round(100 * (_busy_seconds() - before) / window, 1)
        if busy <= busy_limit or time.monotonic() > deadline:
            return busy


def measured(run: Any, *args: Any, busy_limit: float = BUSY_LIMIT, tries: int = TRIES) -> Any:
    """`run(*args)` (a Row with `others_percent_of_core` and `attempts`), taken again, up to `tries`
    times in all, while the rest of the machine used more than `busy_limit`% of a core; before
    each new attempt it waits until the machine is quiet. The last attempt stands, busy or not;
    its row says so."""
    for attempt in range(1, tries + 1):
        row = run(*args)
        row.attempts = attempt
        if row.others_percent_of_core <= busy_limit or attempt == tries:
            break
        click.echo(
            f"the machine was busy ({row.others_percent_of_core}% of a core elsewhere): "
            "waiting for it to be quiet, then measuring again",
            err=True,
        )
        wait_for_quiet(busy_limit)
    return row


tries_option = click.option(
    "--tries",
    default=TRIES,
    type=click.IntRange(1, 10),
    show_default=True,
    help="Times a measurement is taken while the rest of the machine is busy (1: once, busy or not).",
)


def _pin(cpu: int) -> Callable[[], None] | None:
    """Keep server and client on their own cores; otherwise the scheduler's wake-up affinity puts
    the client on the server's core mid-burst and the measurement is of the contention."""
    if (os.cpu_count() or 1) < 2 or not hasattr(os, "sched_setaffinity"):
        return None
    return lambda: os.sched_setaffinity(0, {cpu})


def _start(cmd: list[str]) -> tuple[subprocess.Popen[str], str]:
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, preexec_fn=_pin(0))  # noqa: PLW1509 - one syscall in the child, no lock
    assert proc.stdout is not None
    line = proc.stdout.readline()
    match = re.search(r"(http://\S+)", line)
    if not match:
        proc.kill()
        raise RuntimeError(f"server did not start: {line}")
    url = match.group(1)
    for _ in range(200):
        try:
            httpx.post(
                url + "/v1/chat/completions",
                json={"model": "fake-model", "messages": [{"role": "user", "content": "warm"}], "max_tokens": 1},
                timeout=5,
            )
            break
        except httpx.TransportError:
            time.sleep(0.05)
    return proc, url


def _drive(url: str, streams: int, max_tokens: int) -> list[dict[str, Any]]:
    out = subprocess.run(
        [
            sys.executable,
            "-m",
            "bench.load_client",
            "--url",
            url,
            "--streams",
            str(streams),
            "--max-tokens",
            str(max_tokens),
        ],
        capture_output=True,
        text=True,
        check=True,
        timeout=600,
        preexec_fn=_pin(1),
    )
    streams_seen: list[dict[str, Any]] = json.loads(out.stdout)
    return streams_seen


@dataclass
class Row:
    server: str
    timing: str
    step_timer: str
    streams: int
    token_rate: float
    events: int
    cpu_seconds: float
    events_per_cpu_second: float
    gap_error_p50_ms: float
    gap_error_p99_ms: float
    gap_error_p99_all_ms: float
    gap_source: str
    client_gap_error_p99_ms: float
    burst_p50_ms: float | None
    burst_p99_ms: float | None
    burst_start_gap_error_p99_ms: float | None
    cpu_percent_of_core: float
    others_percent_of_core: float
    lateness_p99_ms: float | None
    step_lag_p99_ms: float | None
    wall_seconds: float
    attempts: int = 1


def _gap_errors(series: list[list[float]], gap: float, since: float = -math.inf) -> list[float]:
    """|gap - set gap| for consecutive chunk times of each stream, counting gaps that start at `since` or later."""
    errors: list[float] = []
    for times in series:
        errors.extend(abs((b - a) - gap) for a, b in itertools.pairwise(times) if a >= since)
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


def _step_timer(metrics_text: str) -> str:
    match = re.search(r'^fake_server:step_timer_info\{[^}]*timer="([^"]+)"', metrics_text, re.MULTILINE)
    return match.group(1) if match else "?"


def _client_gap_p99(client: list[dict[str, Any]], rate: float, first: int) -> float:
    """p99 gap error from the client's receive times (frames from `first` on, [DONE] dropped), in
    the steady part: gaps that begin once every stream has had its first such frame."""
    series = [s["times"][first:-1] for s in client]
    steady = max(s[0] for s in series if s)
    return round(nearest_rank(_gap_errors(series, 1.0 / rate, steady), 99) * 1e3, 3)


def _bursts(series: list[list[float]], gap: float, since: float) -> tuple[float, float, float]:
    """(p50, p99 of a step's send burst: first to last chunk of the step, and p99 gap error of the
    bursts' first chunks), in ms, over the steps from `since`. A step's chunks leave back to back;
    a pause of a third of the set gap starts the next step. The bursts' first chunks carry the
    engine's wake-up error alone; the rest of a stream's gap error is its place in the burst."""
    times = sorted(t for s in series for t in s if t >= since)
    steps: list[list[float]] = [[times[0]]]
    for a, b in itertools.pairwise(times):
        if b - a > gap / 3:
            steps.append([])
        steps[-1].append(b)
    spreads = [s[-1] - s[0] for s in steps]
    starts = [s[0] for s in steps]
    errors = [abs((b - a) - gap) for a, b in itertools.pairwise(starts)]
    return (
        round(nearest_rank(spreads, 50) * 1e3, 3),
        round(nearest_rank(spreads, 99) * 1e3, 3),
        round(nearest_rank(errors, 99) * 1e3, 3),
    )


def measure_fake(streams: int, rate: float, max_tokens: int, timing: str = "auto") -> Row:
    # No prefill cost, so every step lasts exactly the set gap and any deviation is the server's error.
    cmd = [
        sys.executable,
        "-m",
        "fake_server",
        "serve",
        "--port",
        "0",
        "--admin",
        "--token-rate",
        str(rate),
        "--timing",
        timing,
        "--prefill-overhead",
        "0",
        "--prefill-rate",
        "1000000000",
        "--max-num-seqs",
        str(max(streams, 256)),
        "--max-num-batched-tokens",
        "65536",
        "--kv-cache-tokens",
        str(max(streams * (max_tokens + 64), 1_000_000)),
    ]
    proc, url = _start(cmd)
    try:
        httpx.post(url + "/admin/reset", timeout=10)
        cpu0, t0, others = _cpu_seconds(proc.pid), time.perf_counter(), OtherLoad(proc.pid)
        client = _drive(url, streams, max_tokens)
        wall, cpu, other = time.perf_counter() - t0, _cpu_seconds(proc.pid) - cpu0, others.percent()
        ledger = httpx.get(url + "/admin/ledger", timeout=60).json()["records"]
        metrics = httpx.get(url + "/metrics", timeout=10).text
        lag, step_timer = _step_lag_p99(metrics), _step_timer(metrics)
    finally:
        proc.terminate()
        proc.wait(10)
    by_id = {r["id"]: r for r in ledger}
    content_series: list[list[float]] = []
    lateness: list[float] = []
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
    span = max(r["finished"] for r in ledger) - min(r["arrival"] for r in ledger)
    return Row(
        "fake_server",
        timing,
        step_timer,
        streams,
        rate,
        events,
        round(cpu, 3),
        round(events / cpu, 1),
        round(nearest_rank(errors, 50) * 1e3, 3),
        round(nearest_rank(errors, 99) * 1e3, 3),
        round(nearest_rank(every, 99) * 1e3, 3),
        "ledger",
        _client_gap_p99(client, rate, 2),
        *_bursts(content_series, 1.0 / rate, steady),
        round(100 * cpu / span, 1),
        other,
        round(nearest_rank(lateness, 99) * 1e3, 3),
        None if lag is None else lag * 1e3,
        round(wall, 2),
    )


def measure_naive(streams: int, rate: float, max_tokens: int) -> Row:
    proc, url = _start([sys.executable, "-m", "bench.naive_server", "--port", "0", "--token-rate", str(rate)])
    try:
        cpu0, t0, others = _cpu_seconds(proc.pid), time.perf_counter(), OtherLoad(proc.pid)
        client = _drive(url, streams, max_tokens)
        wall, cpu, other = time.perf_counter() - t0, _cpu_seconds(proc.pid) - cpu0, others.percent()
    finally:
        proc.terminate()
        proc.wait(10)
    events = sum(len(s["times"]) for s in client)
    series = [s["times"][2:-1] for s in client]  # skip role and first token; drop [DONE]
    steady = max(s[0] for s in series if s)
    errors = _gap_errors(series, 1.0 / rate, steady)
    every = _gap_errors(series, 1.0 / rate)
    return Row(
        "naive_baseline",
        "-",
        "-",
        streams,
        rate,
        events,
        round(cpu, 3),
        round(events / cpu, 1),
        round(nearest_rank(errors, 50) * 1e3, 3),
        round(nearest_rank(errors, 99) * 1e3, 3),
        round(nearest_rank(every, 99) * 1e3, 3),
        "client",
        round(nearest_rank(errors, 99) * 1e3, 3),
        None,
        None,
        None,
        round(100 * cpu / wall, 1),
        other,
        None,
        None,
        round(wall, 2),
    )


def timer_lateness(steps: int = 200, period: float = 0.02) -> dict[str, float]:
    """p50 and p99 lateness (ms) of the engine's clocks on an idle loop: the floor under
    every timing figure on this machine."""
    import asyncio

    from fake_server.engine.clock import clock_for

    async def run(mode: str) -> tuple[float, float]:
        clock = clock_for(mode)
        lags, t = [], time.perf_counter()
        for _ in range(steps):
            t += period
            await clock.sleep_until(t)
            lags.append(time.perf_counter() - t)
        clock.close()
        return round(nearest_rank(lags, 50) * 1e3, 3), round(nearest_rank(lags, 99) * 1e3, 3)

    out = {}
    for mode in MODES:
        p50, p99 = asyncio.run(run(mode))
        out[f"{mode}_p50_ms"], out[f"{mode}_p99_ms"] = p50, p99
    return out


MODES = ("auto", "loop")


def table(rows: list[Row]) -> str:
    head = (
        "| server | timing | timer | streams | events | server CPU s | events per CPU-s | % of a core | gap err p50 ms "
        "| gap err p99 ms | p99 incl. arrivals | burst p50 / p99 ms | burst start gap err p99 ms "
        "| client-seen gap err p99 ms | client − ledger p99 ms | step lag p99 ms | wall s | others, % of a core "
        "| attempts |"
    )
    out = [head, "|" + "---|" * 19]
    for r in rows:
        out.append(
            f"| {r.server} | {r.timing} | {r.step_timer} | {r.streams} | {r.events} | {r.cpu_seconds} "
            f"| {r.events_per_cpu_second} | {r.cpu_percent_of_core} | {r.gap_error_p50_ms} | {r.gap_error_p99_ms} "
            f"| {r.gap_error_p99_all_ms} | {r.burst_p50_ms} / {r.burst_p99_ms} | {r.burst_start_gap_error_p99_ms} "
            f"| {r.client_gap_error_p99_ms} | {r.lateness_p99_ms} | {r.step_lag_p99_ms} | {r.wall_seconds} "
            f"| {r.others_percent_of_core} | {r.attempts} |"
        )
    return "\n".join(out)


@click.command()
@click.option("--quick", is_flag=True, help="Small loads only (a smoke check, not the recorded figures).")
@click.option("--token-rate", default=20.0, type=float, show_default=True, help="Set tokens per second per stream.")
@click.option("--max-tokens", default=40, type=int, show_default=True, help="Tokens per stream.")
@click.option("--loads", default=None, help="Comma-separated stream counts (default 16,256,1024; --quick: 16,128).")
@click.option(
    "--modes",
    default=",".join(MODES),
    show_default=True,
    help="The fake server's timing modes, each measured at every load, side by side.",
)
@click.option(
    "--repeat",
    default=1,
    type=click.IntRange(1, 20),
    show_default=True,
    help="Runs of every mode (and of the baseline) at every load, in a rotating order.",
)
@tries_option
@click.option(
    "--out",
    default=None,
    help="Result file name in bench/results (default fidelity.json; fidelity-quick.json with --quick).",
)
def main(
    quick: bool,
    token_rate: float,
    max_tokens: int,
    loads: str | None,
    modes: str,
    repeat: int,
    tries: int,
    out: str | None,
) -> None:
    counts = tuple(int(x) for x in loads.split(",")) if loads else (16, 128) if quick else (16, 256, 1024)
    chosen = tuple(m.strip() for m in modes.split(",") if m.strip())
    timers = timer_lateness()
    click.echo(f"timer lateness on an idle loop: {timers}", err=True)
    rows: list[Row] = []
    load = [os.getloadavg()[0]]
    for streams in counts:
        for n in range(repeat):
            # The modes of one load back to back, so they see the same machine; the order rotates
            # from one repeat to the next, so no mode always comes first.
            for mode in chosen[n % len(chosen) :] + chosen[: n % len(chosen)]:
                rows.append(measured(measure_fake, streams, token_rate, max_tokens, mode, tries=tries))
                click.echo(table(rows[-1:]).splitlines()[-1], err=True)
            rows.append(measured(measure_naive, streams, token_rate, max_tokens, tries=tries))
            click.echo(table(rows[-1:]).splitlines()[-1], err=True)
        load.append(os.getloadavg()[0])
    ratios: dict[str, dict[str, float]] = {}
    for streams in counts:  # medians over the repeats
        naive = statistics.median(
            r.events_per_cpu_second for r in rows if r.server == "naive_baseline" and r.streams == streams
        )
        ratios[str(streams)] = {
            mode: round(
                statistics.median(
                    r.events_per_cpu_second
                    for r in rows
                    if r.server == "fake_server" and r.streams == streams and r.timing == mode
                )
                / naive,
                2,
            )
            for mode in chosen
        }
    command = (
        "python -m bench.fidelity"
        + (" --quick" if quick else "")
        + (f" --loads {loads}" if loads else "")
        + f" --token-rate {token_rate:g} --max-tokens {max_tokens} --modes {','.join(chosen)}"
        + (f" --repeat {repeat}" if repeat > 1 else "")
        + (f" --tries {tries}" if tries != TRIES else "")
        + (f" --out {out}" if out else "")
    )
    result = {
        "command": command,
        "date": time.strftime("%Y-%m-%d"),
        "machine": f"{platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}",
        "load_average_1min": {"start": load[0], "after_each_load": load[1:]},
        "timer_lateness": timers,
        "rows": [asdict(r) for r in rows],
        "efficiency_ratio_fake_over_naive": ratios,
    }
    RESULTS.mkdir(exist_ok=True)
    name = out or ("fidelity-quick.json" if quick else "fidelity.json")
    (RESULTS / name).write_text(json.dumps(result, indent=2) + "\n")
    click.echo(table(rows))
    click.echo(
        f"\nevents per CPU-second, fake / naive: {ratios}\ntimer lateness: {timers}\n1-min load average: {load}"
        f"\ncommand: {command}"
    )


if __name__ == "__main__":
    main()
