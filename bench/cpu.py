"""CPU per stream of the fake server in its timing modes, side by side in one run.

For each token rate and timing mode (`loop`: the event loop's timer; `auto`, the default: the
kernel's high-resolution timer) it starts `fake-server serve` as its own process (pinned to CPU
0; this client on CPU 1), sends one streamed request long enough to last `--seconds`, and
reports:

* CPU: the server process's user + system time (from /proc/PID/stat) over the stream, from its
  first chunk to its last, divided by that wall time: the share of one core one stream costs;
* gap error: p50/p99 of |gap between consecutive content chunks - set gap|, from the ledger's
  send times (what the server really did, whatever the client's own timing);
* the step timer the server said it used (`fake_server:step_timer_info` in /metrics);
* the CPU the rest of the machine used meanwhile; a stream during which it was above 10% of a
  core is measured again once the machine is quiet (up to five times in all, `--tries`);
* the floor: the CPU of a bare asyncio loop in its own process that wakes on its timer at the
  same rate and writes 200 bytes to a socket each time, and does nothing else. No Python server
  can cost less than that per token on the machine at hand.

With `--repeat N` every rate runs its modes N times, in a rotating order, and the table shows
each figure's median over the runs the rest of the machine left alone (all rows are in the JSON).

    python -m bench.cpu                      # 20, 200 and 1,000 tok/s, both modes
Results go to bench/results/cpu.json and a Markdown table on stdout.
"""

from __future__ import annotations

import itertools
import json
import math
import os
import platform
import statistics
import subprocess
import sys
import time
from dataclasses import asdict, dataclass

import click
import httpx

from fake_server import serve_subprocess

from .fidelity import (
    BUSY_LIMIT,
    RESULTS,
    TRIES,
    OtherLoad,
    _cpu_seconds,
    _step_timer,
    measured,
    nearest_rank,
    tries_option,
)

MODES = ("loop", "auto")


@dataclass
class Row:
    timing: str
    step_timer: str
    token_rate: float
    tokens: int
    wall_s: float
    cpu_s: float
    cpu_percent_of_core: float
    gap_error_p50_ms: float
    gap_error_p99_ms: float
    others_percent_of_core: float
    attempts: int = 1


# A bare asyncio loop: timer wake-ups at the rate, one 200-byte socket write each, CPU from /proc.
_FLOOR = """
import asyncio, socket, sys, time
from pathlib import Path
rate, seconds = float(sys.argv[1]), float(sys.argv[2])
def cpu():
    return int(Path("/proc/self/schedstat").read_text().split()[0]) / 1e9
async def main():
    a, b = socket.socketpair()
    b.setblocking(False)
    n = int(rate * seconds)
    c0, t0 = cpu(), time.perf_counter()
    t = t0
    for _ in range(n):
        t += 1 / rate
        await asyncio.sleep(max(0.0, t - time.perf_counter()))
        a.send(b"x" * 200)
        try:
            b.recv(4096)
        except BlockingIOError:
            pass
    print((cpu() - c0) / (time.perf_counter() - t0))
asyncio.run(main())
"""


def floor_percent(rate: float, seconds: float) -> float:
    """CPU share of a bare asyncio loop waking `rate` times a second, pinned like the server."""
    pin = (lambda: os.sched_setaffinity(0, {0})) if (os.cpu_count() or 1) >= 2 else None
    out = subprocess.run(
        [sys.executable, "-c", _FLOOR, f"{rate:g}", f"{seconds:g}"],
        capture_output=True,
        text=True,
        check=True,
        timeout=seconds * 4 + 30,
        preexec_fn=pin,
    )
    return round(100 * float(out.stdout), 1)


def _pin(pid: int, cpu: int) -> None:
    if (os.cpu_count() or 1) >= 2 and hasattr(os, "sched_setaffinity"):
        os.sched_setaffinity(pid, {cpu})


def measure(timing: str, rate: float, seconds: float) -> Row:
    tokens = max(20, round(rate * seconds))
    args = ("--timing", timing, "--token-rate", f"{rate:g}", "--prefill-overhead", "0", "--max-model-len", "65536")
    with serve_subprocess(*args) as server:
        assert server.process is not None
        pid = server.process.pid
        _pin(pid, 0)
        _pin(0, 1)
        body = {
            "model": "fake-model",
            "messages": [{"role": "user", "content": "cpu"}],
            "max_tokens": tokens,
            "ignore_eos": True,
            "stream": True,
        }
        cpu0 = wall0 = None
        with (
            httpx.Client(timeout=seconds * 4 + 30) as client,
            client.stream("POST", server.openai_base_url + "/chat/completions", json=body) as r,
        ):
            for _ in r.iter_raw():
                if cpu0 is None:
                    cpu0, wall0, others = _cpu_seconds(pid), time.perf_counter(), OtherLoad(pid)
            cpu1, wall1, other = _cpu_seconds(pid), time.perf_counter(), others.percent()
        assert cpu0 is not None and wall0 is not None
        (record,) = server.ledger()
        step_timer = _step_timer(server.metrics())
    assert record["completion_tokens"] == tokens, record
    times = [t for t, kind, _ in record["chunks"] if kind == "content"]
    gap = 1.0 / rate
    errors = [abs((b - a) - gap) for a, b in itertools.pairwise(times)]
    wall, cpu = wall1 - wall0, cpu1 - cpu0
    return Row(
        timing,
        step_timer,
        rate,
        tokens,
        round(wall, 2),
        round(cpu, 3),
        round(100 * cpu / wall, 1),
        round(nearest_rank(errors, 50) * 1e3, 3),
        round(nearest_rank(errors, 99) * 1e3, 3),
        other,
    )


def _median(values: list[float]) -> float:
    return round(statistics.median(values), 3)


def table(rows: list[Row], floors: dict[float, list[float]]) -> str:
    """One line per rate; each mode's CPU and gap error (medians over repeats), its timer, the floor."""
    rates = sorted({r.token_rate for r in rows})
    out = [
        "| tok/s (one stream) | "
        + " | ".join(f"{m}: timer | {m}: % of a core | {m}: gap err p50 / p99 ms" for m in MODES)
        + " | floor: bare asyncio loop, % of a core | others, % of a core (max of the runs counted) |",
        "|---|" + "---|---|---|" * len(MODES) + "---|---|",
    ]
    for rate in rates:
        cells = []
        for mode in MODES:
            runs = [x for x in rows if x.timing == mode and x.token_rate == rate]
            quiet = [x for x in runs if x.others_percent_of_core <= BUSY_LIMIT]
            runs = quiet or runs  # a run the machine kept busy counts only when there is no other
            timers = "/".join(sorted({x.step_timer for x in runs}))
            cpu = _median([x.cpu_percent_of_core for x in runs])
            p50, p99 = _median([x.gap_error_p50_ms for x in runs]), _median([x.gap_error_p99_ms for x in runs])
            cells.append(f"{timers} | {cpu:g} | {p50:g} / {p99:g}")
        others = max(
            (x.others_percent_of_core for x in rows if x.token_rate == rate and x.others_percent_of_core <= BUSY_LIMIT),
            default=math.nan,
        )
        out.append(f"| {rate:g} | " + " | ".join(cells) + f" | {_median(floors[rate]):g} | {others:g} |")
    return "\n".join(out)


@click.command()
@click.option("--rates", default="20,200,1000", show_default=True, help="Comma-separated tokens per second.")
@click.option("--seconds", default=4.0, type=float, show_default=True, help="How long each stream lasts.")
@click.option(
    "--repeat",
    default=1,
    type=click.IntRange(1, 20),
    show_default=True,
    help="Runs of every mode at every rate; the table shows medians.",
)
@tries_option
def main(rates: str, seconds: float, repeat: int, tries: int) -> None:
    rows = []
    floors: dict[float, list[float]] = {}
    load = [os.getloadavg()[0]]
    for rate in (float(x) for x in rates.split(",")):
        for n in range(repeat):
            # The modes of one rate run back to back, so they see the same machine; the order
            # rotates from one repeat to the next, so no mode always comes first.
            for mode in MODES[n % len(MODES) :] + MODES[: n % len(MODES)]:
                rows.append(measured(measure, mode, rate, seconds, tries=tries))
                click.echo(json.dumps(asdict(rows[-1])), err=True)
            floors.setdefault(rate, []).append(floor_percent(rate, seconds))
        load.append(os.getloadavg()[0])
    command = f"python -m bench.cpu --rates {rates} --seconds {seconds:g} --repeat {repeat}" + (
        f" --tries {tries}" if tries != TRIES else ""
    )
    result = {
        "command": command,
        "date": time.strftime("%Y-%m-%d"),
        "machine": f"{platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}",
        "load_average_1min": {"start": load[0], "after_each_rate": load[1:]},
        "rows": [asdict(r) for r in rows],
        "floor_percent_of_core": {f"{k:g}": v for k, v in floors.items()},
    }
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / "cpu.json").write_text(json.dumps(result, indent=2) + "\n")
    click.echo(table(rows, floors))
    click.echo(f"\ncommand: {command}; 1-min load average {load}")


if __name__ == "__main__":
    main()
