"""Soak: mixed streaming traffic against one fake server for a while, and what it leaves behind.

The server runs in its own process (`fake-server serve --admin`), so its memory and file
descriptors can be read from /proc. Client workers (threads, httpx) send a seeded mix: streams
read to [DONE], streams dropped after a few chunks, whole answers, and text completions. A
controller changes the fault rules (cut, stream_error, no_done, http_error 429/503, each at a
seeded rate) and the slot count over /admin every couple of seconds. Afterwards:

- the server's RSS and open file descriptors, sampled once a second, must stay flat after the
  warm-up: the first third of the run, and at least until the in-memory ledger is full (it keeps
  the last LEDGER_KEEP records, `--ledger-keep`; the `--ledger` file keeps them all). From there
  RSS may grow by RSS_MARGIN_MIB at most, and descriptors by FD_MARGIN;
- no slot, queue entry or KV block is left (vllm:num_requests_running/waiting, kv_cache_usage_perc);
- the ledger is complete: one record per request the client sent (counted, and each response id
  the client saw appears exactly once), each ended with a finish reason or, if refused, its error.
  It is read from the server's `--ledger` file, which holds every record, not only the last 50,000.

`make soak` runs it for ten minutes (`python -m bench.soak --minutes 10`) and writes
bench/results/soak.json; tests/server/test_soak.py runs it for twenty seconds.
"""

from __future__ import annotations

import argparse
import json
import random
import re
import tempfile
import threading
import time
from collections import Counter
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import httpx

from bench import results_dir
from fake_server import serve_subprocess
from fake_server.hosting.launch import ledger_lines

MODEL = "fake-model"
RSS_MARGIN_MIB = 8.0  # growth allowed after the warm-up: allocator noise, not a per-request leak
LEDGER_KEEP = 2000  # records the server keeps in memory (--ledger-keep), so its memory is bounded early
FD_MARGIN = 8  # descriptors: a few keep-alive connections may be open at a sampling instant
_GAUGE = re.compile(
    r"^(vllm:num_requests_running|vllm:num_requests_waiting|vllm:kv_cache_usage_perc)\{[^}]*\} (\S+)$", re.MULTILINE
)


@dataclass
class SoakResult:
    seconds: float
    sent: int
    kinds: dict[str, int]
    ids_seen: int
    records: int
    problems: list[str]
    rss_mib: list[float] = field(default_factory=list)  # one sample a second, during the traffic
    fds: list[int] = field(default_factory=list)
    sent_at: list[int] = field(default_factory=list)  # requests sent by each sample
    warm_up_s: int = 0  # samples (seconds) before the flatness window
    rss_growth_mib: float = 0.0  # after the warm-up
    kib_per_request: float = 0.0  # the same, per request sent after the warm-up
    fd_growth: int = 0
    gauges: dict[str, float] = field(default_factory=dict)
    reconfigurations: int = 0

    @property
    def ok(self) -> bool:
        return not self.problems


def _rss_mib(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return 0.0


def _fds(pid: int) -> int:
    return len(list(Path(f"/proc/{pid}/fd").iterdir()))


class _Client:
    """One worker: a seeded mix of requests; counts what it sent and the ids it saw."""

    def __init__(self, base: str, seed: int, stop: threading.Event) -> None:
        self.http = httpx.Client(base_url=base, timeout=httpx.Timeout(30.0), trust_env=False)
        self.rng = random.Random(seed)
        self.stop = stop
        self.sent = 0
        self.kinds: Counter[str] = Counter()
        self.ids: list[str] = []

    def run(self, *, max_requests: int) -> None:
        while not self.stop.is_set() and self.sent < max_requests:
            kind = self.rng.choices(["stream", "drop", "whole", "completion"], weights=[5, 2, 2, 1])[0]
            body: dict[str, Any] = {
                "model": MODEL,
                "max_tokens": self.rng.randint(4, 24),
                "seed": self.rng.randint(0, 9),
            }
            try:
                self.sent += 1  # counted before sending: a request that reached the server must be in its ledger
                self.kinds[kind] += 1
                if kind == "completion":
                    self._whole("/v1/completions", {**body, "prompt": "soak " * self.rng.randint(1, 40)})
                else:
                    body["messages"] = [{"role": "user", "content": "soak " * self.rng.randint(1, 40)}]
                    if kind == "whole":
                        self._whole("/v1/chat/completions", body)
                    else:
                        self._stream(body, drop_after=self.rng.randint(1, 3) if kind == "drop" else None)
            except httpx.HTTPError as exc:  # a cut stream: expected under the fault rules
                self.kinds[f"client saw {type(exc).__name__}"] += 1
        self.http.close()

    def _whole(self, path: str, body: dict[str, Any]) -> None:
        reply = self.http.post(path, json=body)
        if reply.status_code == 200:
            self.ids.append(reply.json()["id"])

    def _stream(self, body: dict[str, Any], *, drop_after: int | None) -> None:
        with self.http.stream("POST", "/v1/chat/completions", json={**body, "stream": True}) as reply:
            if reply.status_code != 200:
                reply.read()
                return
            seen = 0
            for line in reply.iter_lines():
                if line.startswith("data: {") and '"id"' in line:
                    if seen == 0:
                        self.ids.append(json.loads(line[6:])["id"])
                    seen += 1
                    if drop_after is not None and seen >= drop_after:
                        return  # closes the connection mid-stream


def _controller(server: Any, rng: random.Random, stop: threading.Event, every_s: float) -> int:
    """Change faults and slots until stopped; returns how many changes were made."""
    changes = 0
    while not stop.wait(every_s):
        rules = rng.sample(
            [
                {"kind": "cut", "after_tokens": rng.randint(1, 6), "rate": 0.1},
                {"kind": "stream_error", "after_tokens": rng.randint(1, 6), "rate": 0.05},
                {"kind": "no_done", "after_tokens": rng.randint(1, 6), "rate": 0.05},
                {"kind": "http_error", "status": 429, "retry_after": 1, "rate": 0.05},
                {"kind": "http_error", "status": 503, "rate": 0.05},
            ],
            k=rng.randint(0, 3),
        )
        server.set_faults(rules)
        server.configure(max_num_seqs=rng.choice([2, 4, 8, 16]))
        changes += 1
    server.set_faults([])
    return changes


def run_soak(
    seconds: float,
    *,
    ledger: Path,
    workers: int = 4,
    seed: int = 1,
    max_requests: int = 400_000,
    reconfigure_every_s: float = 2.0,
    ledger_keep: int = LEDGER_KEEP,
) -> SoakResult:
    """Soak one server for `seconds` (bounded also by `max_requests` in all) and check it. A short soak keeps
    fewer records in memory (`ledger_keep`), so that its memory is bounded, and measured, early."""
    args = (
        "--token-rate",
        "2000",
        "--max-num-seqs",
        "8",
        "--output-len-min",
        "4",
        "--output-len-max",
        "24",
        "--max-model-len",
        "1024",
        "--seed",
        str(seed),
        "--ledger",
        str(ledger),
        "--ledger-keep",
        str(ledger_keep),
    )
    with serve_subprocess(*args) as server:
        pid = server.process.pid
        stop = threading.Event()
        clients = [_Client(server.base_url, seed * 1000 + i, stop) for i in range(workers)]
        threads = [
            threading.Thread(target=c.run, kwargs={"max_requests": max_requests // workers}, daemon=True)
            for c in clients
        ]
        changes: list[int] = []
        control = threading.Thread(
            target=lambda: changes.append(_controller(server, random.Random(seed), stop, reconfigure_every_s)),
            daemon=True,
        )
        started = time.monotonic()
        for thread in [*threads, control]:
            thread.start()
        rss, fds, sent_at = [], [], []
        while time.monotonic() - started < seconds and any(t.is_alive() for t in threads):
            rss.append(round(_rss_mib(pid), 2))
            fds.append(_fds(pid))
            sent_at.append(sum(c.sent for c in clients))
            time.sleep(1.0)
        stop.set()
        for thread in [*threads, control]:
            thread.join(60)
        took = time.monotonic() - started
        server.ledger(settle=30)  # every request has ended
        text = httpx.get(server.base_url + "/metrics", timeout=10, trust_env=False).text
        gauges = {name: float(value) for name, value in _GAUGE.findall(text)}
        log = server.log_text()
    records = ledger_lines(ledger)
    sent = sum(c.sent for c in clients)
    ids = [i for c in clients for i in c.ids]
    problems: list[str] = []
    if "Traceback" in log:  # the server's own failure: its first traceback says where
        problems.append("the server logged: " + log[log.index("Traceback") :][:3000])
    by_id = Counter(r["id"] for r in records)
    problems += [f"id {i} is in the ledger {by_id[i]} times" for i in ids if by_id[i] != 1][:10]
    if len(records) != sent:
        problems.append(f"the client sent {sent} requests; the ledger has {len(records)}")
    unended = [
        r["id"]
        for r in records
        if r.get("finished") is None
        or not (r["finish_reason"] if r["status"] == 200 else r["status"] >= 400 and r["error"])
    ]
    problems += [f"record {i} has no finish reason or error" for i in unended[:10]]
    # a 5xx is right only where a fault rule asked for it (stream_error on a whole answer is a 500)
    problems += [
        f"record {r['id']}: {r['status']} with no fault asked for"
        for r in records
        if r["status"] >= 500 and not r.get("fault")
    ][:10]
    if gauges != {"vllm:num_requests_running": 0.0, "vllm:num_requests_waiting": 0.0, "vllm:kv_cache_usage_perc": 0.0}:
        problems.append(f"left in the engine after the soak: {gauges}")
    full = next((i for i, n in enumerate(sent_at) if n >= ledger_keep + 500), len(rss))
    warm = max(len(rss) // 3, full)
    if warm > len(rss) - 5:
        problems.append(f"too short: the ledger filled at sample {full} of {len(rss)}, leaving no window to measure")
        warm = max(0, len(rss) - 5)
    rss_growth = round(max(rss[warm:]) - rss[warm], 2)
    per_request = round(rss_growth * 1024 / max(1, sent_at[-1] - sent_at[warm]), 3)
    fd_growth = max(fds[warm:]) - fds[warm]
    if rss_growth > RSS_MARGIN_MIB:
        problems.append(f"RSS grew {rss_growth} MiB after the warm-up (margin {RSS_MARGIN_MIB} MiB)")
    if fd_growth > FD_MARGIN:
        problems.append(f"open descriptors grew by {fd_growth} after the warm-up (margin {FD_MARGIN})")
    kinds: Counter[str] = Counter()
    for c in clients:
        kinds.update(c.kinds)
    return SoakResult(
        round(took, 1),
        sent,
        dict(kinds),
        len(ids),
        len(records),
        problems,
        rss,
        fds,
        sent_at,
        warm,
        rss_growth,
        per_request,
        fd_growth,
        gauges,
        changes[0] if changes else 0,
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--minutes", type=float, default=10.0)
    parser.add_argument("--workers", type=int, default=4)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--max-requests", type=int, default=400_000, help="Stop when this many were sent.")
    parser.add_argument(
        "--ledger-keep",
        type=int,
        default=LEDGER_KEEP,
        help="Records the server keeps in memory; fewer bound its memory sooner (a short soak).",
    )
    parser.add_argument("--out", type=Path, default=results_dir() / "soak.json")
    args = parser.parse_args()
    if args.ledger_keep < 1:  # the server would refuse it at start, after the soak had begun
        parser.error(f"--ledger-keep {args.ledger_keep}: keep at least one record")
    with tempfile.TemporaryDirectory(prefix="soak-") as tmp:
        result = run_soak(
            args.minutes * 60,
            ledger=Path(tmp) / "ledger.jsonl",
            workers=args.workers,
            seed=args.seed,
            max_requests=args.max_requests,
            ledger_keep=args.ledger_keep,
        )
    command = (
        f"python -m bench.soak --minutes {args.minutes:g} --workers {args.workers} --seed {args.seed} "
        f"--max-requests {args.max_requests}"
        + (f" --ledger-keep {args.ledger_keep}" if args.ledger_keep != LEDGER_KEEP else "")
    )
    args.out.write_text(json.dumps({**asdict(result), "ok": result.ok, "command": command}, indent=2) + "\n")
    print(
        f"{result.sent} requests in {result.seconds} s ({result.kinds}); ledger {result.records} records; "
        f"{result.reconfigurations} reconfigurations"
    )
    print(
        f"RSS {result.rss_mib[0]} -> {result.rss_mib[-1]} MiB (after a {result.warm_up_s} s warm-up: "
        f"{result.rss_growth_mib} MiB, {result.kib_per_request} KiB per request; margin {RSS_MARGIN_MIB} MiB); fds {result.fds[0]} -> {result.fds[-1]} (growth {result.fd_growth}, margin {FD_MARGIN})"
    )
    print("OK" if result.ok else "PROBLEMS:\n  " + "\n  ".join(result.problems))
    raise SystemExit(0 if result.ok else 1)


if __name__ == "__main__":
    main()
