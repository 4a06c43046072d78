"""CPU per stream of the fake server in both timing modes, side by side in one run.

For each timing mode (`cheap`, the default, and `precise`) and token rate, it starts
`fake-server serve` as its own process (pinned to CPU 0; this client on CPU 1), sends one
streamed request long enough to last `--seconds`, and reports:

* CPU: the server process's user + system time (from /proc/PID/stat) over the stream, from its
  first chunk to its last, divided by that wall time: the share of one core one stream costs;
* gap error: p50/p99 of |gap between consecutive content chunks - set gap|, from the ledger's
  send times (what the server really did, whatever the client's own timing);
* the floor: the CPU of a bare asyncio loop in its own process that wakes on its timer at the
  same rate and writes 200 bytes to a socket each time, and does nothing else. No Python server
  can cost less than that per token on the machine at hand.

    python -m bench.cpu                      # 20, 200 and 1,000 tok/s, both modes
Results go to bench/results/cpu.json and a Markdown table on stdout.
"""

from __future__ import annotations

import itertools
import json
import os
import platform
import subprocess
import sys
import time
from dataclasses import asdict, dataclass

import click
import httpx

from fake_server import serve_subprocess

from .fidelity import RESULTS, _cpu_seconds, nearest_rank

MODES = ("cheap", "precise")


@dataclass
class Row:
    timing: str
    token_rate: float
    tokens: int
    wall_s: float
    cpu_s: float
    cpu_percent_of_core: float
    gap_error_p50_ms: float
    gap_error_p99_ms: float


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
    out = subprocess.run([sys.executable, "-c", _FLOOR, f"{rate:g}", f"{seconds:g}"], capture_output=True,
                         text=True, check=True, timeout=seconds * 4 + 30, preexec_fn=pin)
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
        body = {"model": "fake-model", "messages": [{"role": "user", "content": "cpu"}], "max_tokens": tokens,
                "ignore_eos": True, "stream": True}
        cpu0 = wall0 = None
        with httpx.Client(timeout=seconds * 4 + 30) as client, \
                client.stream("POST", server.openai_base_url + "/chat/completions", json=body) as r:
            for _ in r.iter_raw():
                if cpu0 is None:
                    cpu0, wall0 = _cpu_seconds(pid), time.perf_counter()
            cpu1, wall1 = _cpu_seconds(pid), time.perf_counter()
        assert cpu0 is not None and wall0 is not None
        (record,) = server.ledger()
    assert record["completion_tokens"] == tokens, record
    times = [t for t, kind, _ in record["chunks"] if kind == "content"]
    gap = 1.0 / rate
    errors = [abs((b - a) - gap) for a, b in itertools.pairwise(times)]
    wall, cpu = wall1 - wall0, cpu1 - cpu0
    return Row(timing, rate, tokens, round(wall, 2), round(cpu, 3), round(100 * cpu / wall, 1),
               round(nearest_rank(errors, 50) * 1e3, 3), round(nearest_rank(errors, 99) * 1e3, 3))


def table(rows: list[Row], floors: dict[float, float]) -> str:
    rates = sorted({r.token_rate for r in rows})
    out = ["| tok/s (one stream) | " + " | ".join(f"{m}: % of a core | {m}: gap err p50 / p99 ms" for m in MODES)
           + " | floor: bare asyncio loop, % of a core |",
           "|---|" + "---|---|" * len(MODES) + "---|"]
    for rate in rates:
        cells = []
        for mode in MODES:
            r = next(x for x in rows if x.timing == mode and x.token_rate == rate)
            cells.append(f"{r.cpu_percent_of_core} | {r.gap_error_p50_ms} / {r.gap_error_p99_ms}")
        out.append(f"| {rate:g} | " + " | ".join(cells) + f" | {floors[rate]} |")
    return "\n".join(out)


@click.command()
@click.option("--rates", default="20,200,1000", show_default=True, help="Comma-separated tokens per second.")
@click.option("--seconds", default=4.0, type=float, show_default=True, help="How long each stream lasts.")
def main(rates: str, seconds: float) -> None:
    rows = []
    floors: dict[float, float] = {}
    for rate in (float(x) for x in rates.split(",")):
        for mode in MODES:  # the modes of one rate run back to back, so they see the same machine
            rows.append(measure(mode, rate, seconds))
            click.echo(json.dumps(asdict(rows[-1])), err=True)
        floors[rate] = floor_percent(rate, seconds)
    command = f"python -m bench.cpu --rates {rates} --seconds {seconds:g}"
    result = {"command": command, "date": time.strftime("%Y-%m-%d"),
              "machine": f"{platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}",
              "rows": [asdict(r) for r in rows], "floor_percent_of_core": {f"{k:g}": v for k, v in floors.items()}}
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / "cpu.json").write_text(json.dumps(result, indent=2) + "\n")
    click.echo(table(rows, floors))
    click.echo(f"\ncommand: {command}")


if __name__ == "__main__":
    main()
