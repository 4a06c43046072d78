"""The grader's sandbox against the real bubblewrap: isolation, limits, servers inside, cleanup.

Hostile behaviour is played by small scripts in the submission folder, run as the candidate.
Every loop in them is bounded in count and time, and nothing sends traffic to a non-loopback
address.
"""

from __future__ import annotations

import itertools
import json
import os
import shutil
import signal
import subprocess
import sys
import sysconfig
import textwrap
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import grader
from grader.sandbox import Limits, RunResult, Sandbox, SandboxError, isolation_available
from grader.sandbox.cgroups import _mounts, _own_paths
from grader.sandbox.uids import FIRST, LAST

AVAILABLE, WHY = isolation_available()
pytestmark = pytest.mark.skipif(not AVAILABLE, reason=f"bubblewrap sandbox unavailable: {WHY}")

LIMITS = Limits(cpu_s=20, memory_bytes=256 * 1024**2, pids=64, output_bytes=1024**2, disk_bytes=48 * 1024**2)
SECRET = "do-not-leak-7f3a"

PROBE = """
import json, os, sys
out = {}
for path in sys.argv[1:]:
    try:
        with open(path) as fh:
            out[path] = "READ:" + fh.read(200)
    except OSError as exc:
        out[path] = type(exc).__name__
print(json.dumps(out))
"""

WRITE_PROBE = """
import json, sys
out = {}
for path in sys.argv[1:]:
    try:
        with open(path, "w") as fh:
            fh.write("x")
        out[path] = "WROTE"
    except OSError as exc:
        out[path] = type(exc).__name__
print(json.dumps(out))
"""

FIND_HARNESS = """
def harness_pid():
    for name in os.listdir("/proc"):
        if name.isdigit():
            try:
                with open(f"/proc/{name}/cmdline", "rb") as fh:
                    if fh.read().split(b"\\0")[1:3] == [b"-m", b"grader.sandbox.harness"]:
                        return int(name)
            except OSError:
                pass
"""

SIGNAL_PROBE = (
    "import json, os, signal, sys, httpx\n"
    + FIND_HARNESS
    + """
out = {"harness": harness_pid()}
for label, pid in (("harness", out["harness"]), ("init", 1)):
    try:
        os.kill(pid, signal.SIGKILL)
        out[label + "_kill"] = "SENT"
    except OSError as exc:
        out[label + "_kill"] = type(exc).__name__
    try:
        open(f"/proc/{pid}/environ").read()
        out[label + "_environ"] = "READ"
    except OSError as exc:
        out[label + "_environ"] = type(exc).__name__
r = httpx.get(sys.argv[1] + "/admin/ledger", timeout=10)
out["admin_status"] = r.status_code
out["admin_body"] = r.text[:200]
print(json.dumps(out))
"""
)

DAEMON = """
import os, sys, time
marker, flag = sys.argv[1], sys.argv[2]
if os.fork() == 0:
    os.setsid()
    if os.fork() == 0:
        os.execvp("python", ["python", "-c", "import time; open(%r, 'w').write('up'); time.sleep(120)" % flag, marker])
    os._exit(0)
deadline = time.monotonic() + 20
while not os.path.exists(flag) and time.monotonic() < deadline:
    time.sleep(0.02)
print("daemon up" if os.path.exists(flag) else "daemon never started")
"""

FIND_MARKER = """
import os, sys
hits = []
for name in os.listdir("/proc"):
    if name.isdigit() and int(name) != os.getpid():
        try:
            with open(f"/proc/{name}/cmdline", "rb") as fh:
                if sys.argv[1].encode() in fh.read():
                    hits.append(name)
        except OSError:
            pass
print(len(hits))
"""

FORK_BOMB = """
import os, time
pids, error = [], None
for _ in range(3000):
    try:
        pid = os.fork()
    except OSError as exc:
        error = type(exc).__name__
        break
    if pid == 0:
        time.sleep(30)
        os._exit(0)
    pids.append(pid)
print(len(pids), error, flush=True)
"""

MEMORY_HOG = """
import sys
chunks = []
for i in range(32):  # at most 2 GiB
    chunks.append(b"x" * (64 * 1024 * 1024))
    print(len(chunks) * 64, "MiB", flush=True)
print("never stopped")
"""

FLOOD = """
import sys
block = "y" * 65535 + "\\n"
for _ in range(1024):  # at most 64 MiB
    sys.stdout.write(block)
sys.stdout.flush()
print("not cut")
"""

DISK_FILL = """
import errno, os
written, error = 0, None
try:
    with open("fill.bin", "wb") as fh:
        for _ in range(256):  # at most 256 MiB
            fh.write(b"z" * (1024 * 1024))
            fh.flush()
            written += 1
except OSError as exc:
    error = errno.errorcode.get(exc.errno, str(exc.errno))
finally:
    os.remove("fill.bin")
print(written, error)
"""

STREAM = """
import json, sys, openai
client = openai.OpenAI(base_url=sys.argv[1], api_key="unused", max_retries=0)
pieces = []
for chunk in client.chat.completions.create(model="fake-model", messages=[{"role": "user", "content": "hi"}],
                                            max_tokens=12, stream=True):
    if chunk.choices and chunk.choices[0].delta.content:
        pieces.append(chunk.choices[0].delta.content)
print(json.dumps({"chunks": len(pieces), "text": "".join(pieces)}))
"""


def _write_scripts(folder: Path) -> None:
    scripts = {
        "probe.py": PROBE,
        "write_probe.py": WRITE_PROBE,
        "signal_probe.py": SIGNAL_PROBE,
        "daemon.py": DAEMON,
        "find_marker.py": FIND_MARKER,
        "fork_bomb.py": FORK_BOMB,
        "memory_hog.py": MEMORY_HOG,
        "flood.py": FLOOD,
        "disk_fill.py": DISK_FILL,
        "stream.py": STREAM,
    }
    for name, text in scripts.items():
        (folder / name).write_text(textwrap.dedent(text))
    (folder / "submission.yaml").write_text("version: 1\n")
    (folder / "results").mkdir()
    (folder / "results" / "keep.json").write_text('{"kept": true}\n')
    os.symlink("/etc/hostname", folder / "results" / "escape.json")


@pytest.fixture(scope="module")
def host(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """A submission, and the things beside it on the host that the candidate must never see."""
    root = tmp_path_factory.mktemp("sandbox")
    submission = root / "submission"
    submission.mkdir()
    _write_scripts(submission)
    for name in ("submissions/other", "out"):
        (root / name).mkdir(parents=True)
        (root / name / "secret.txt").write_text(SECRET)
    return {"root": root, "submission": submission}


@pytest.fixture(scope="module")
def box(host: dict[str, Path]) -> Iterator[Sandbox]:
    with Sandbox(host["submission"], limits=LIMITS) as sandbox:
        yield sandbox


def run_json(box: Sandbox, argv: list[str], timeout_s: float = 30) -> dict[str, Any]:
    result = box.run(["python", *argv], timeout_s=timeout_s)
    assert result.exit_code == 0, result
    printed: dict[str, Any] = json.loads(result.stdout_tail)
    return printed


def test_the_sandbox_says_what_isolates_it(box: Sandbox) -> None:
    assert box.isolated
    # 65534, or where RLIMIT_NPROC holds the process limit a uid of its own (grader/sandbox/uids.py)
    by_rlimit = box.enforcement is not None and box.enforcement.holders()["processes"] == "rlimit"
    uid = int(box.run(["id", "-u"], timeout_s=10).stdout_tail.strip())
    assert FIRST <= uid <= LAST if by_rlimit else uid == 65534
    assert f"candidate as uid {uid};" in box.note and "loopback only" in box.note
    # The candidate's `python` is the kit's, and the kit parts it may use import.
    result = box.run(["python", "-c", "import sys, fake_server, api_client; print(sys.prefix)"], timeout_s=30)
    assert result.exit_code == 0 and result.stdout_tail.strip() == sys.prefix, result


def test_only_loopback_and_no_route_off_the_machine(box: Sandbox) -> None:
    devices = box.run(["cat", "/proc/net/dev"], timeout_s=10).stdout_tail.splitlines()[2:]
    assert [line.split(":")[0].strip() for line in devices] == ["lo"]
    routes = box.run(["cat", "/proc/net/route"], timeout_s=10).stdout_tail.splitlines()[1:]
    assert [line for line in routes if line.strip() and not line.startswith("lo")] == []
    links = box.run(["ip", "-o", "link"], timeout_s=10)
    assert links.exit_code == 0
    assert [line.split(":")[1].strip() for line in links.stdout_tail.splitlines()] == ["lo"]


def test_hidden_material_is_unreadable(box: Sandbox, host: dict[str, Path]) -> None:
    grader_init = Path(grader.__file__).resolve()
    checkout = grader_init.parent.parent
    paths = [
        str(grader_init),
        "/tmp/.h/kit/grader/__init__.py",
        "/tmp/.h/submission/probe.py",
        str(host["root"] / "submissions/other/secret.txt"),
        str(host["root"] / "out/secret.txt"),
        str(checkout / "tests" / "rooms" / "sandbox" / "test_sandbox.py"),
        str(checkout / "pyproject.toml"),
        "/root/.bash_history",
    ]
    seen = run_json(box, ["probe.py", *paths])
    assert not any(v.startswith("READ") for v in seen.values()), seen
    assert seen["/tmp/.h/kit/grader/__init__.py"] == "PermissionError"
    listing = box.run(["ls", "/tmp/.h"], timeout_s=10)
    assert listing.exit_code != 0 and "Permission denied" in listing.stderr_tail
    # What the candidate may use is there: the fake server package and the starter.
    fake_init = str(Path(grader.__file__).resolve().parent.parent / "fake_server" / "__init__.py")
    assert run_json(box, ["probe.py", fake_init])[fake_init].startswith("READ")


def test_nothing_is_writable_outside_the_box(box: Sandbox) -> None:
    fake_dir = Path(grader.__file__).resolve().parent.parent / "fake_server"
    targets = [
        "/usr/x",
        "/etc/x",
        "/x",
        f"{fake_dir}/x.py",
        f"{sys.prefix}/x",
        "/tmp/.h/x",
        "/proc/sys/kernel/x",
        "/dev/shm/x",
    ]
    seen = run_json(box, ["write_probe.py", *targets, "/tmp/work/mine.txt", "/tmp/home/mine.txt"])
    assert {t: seen[t] for t in targets if seen[t] == "WROTE"} == {}
    assert seen["/tmp/work/mine.txt"] == seen["/tmp/home/mine.txt"] == "WROTE"


def test_cannot_signal_the_harness_or_reach_admin(box: Sandbox) -> None:
    server = box.serve("guarded", seed=1)
    try:
        seen = run_json(box, ["signal_probe.py", server["url"]])
        assert seen["harness"] not in (None, 1)
        assert seen["harness_kill"] == seen["init_kill"] == "PermissionError"
        assert seen["harness_environ"] == seen["init_environ"] == "PermissionError"
        assert seen["admin_status"] in (401, 403, 404) and "records" not in seen["admin_body"]
        assert box.ledger("guarded", settle=0.1) == []  # the harness and its server are still there
    finally:
        box.stop_server("guarded")


def _outer_hits(marker: str) -> int:
    hits = 0
    for name in os.listdir("/proc"):
        if name.isdigit():
            try:
                hits += marker.encode() in Path(f"/proc/{name}/cmdline").read_bytes()
            except OSError:
                pass
    return hits


def test_a_double_forked_daemon_is_gone_after_the_run(box: Sandbox) -> None:
    marker = "daemon-marker-91c2"
    result = box.run(["python", "daemon.py", marker, "/tmp/work/daemon.flag"], timeout_s=30)
    assert result.stdout_tail.strip() == "daemon up"
    assert _outer_hits(marker) == 0
    inside = box.run(["python", "find_marker.py", marker], timeout_s=10)
    assert inside.stdout_tail.strip() == "0"


def test_wall_timeout_kills_a_sleeper(box: Sandbox) -> None:
    start = time.monotonic()
    result = box.run(["sleep", "60"], timeout_s=1.0)
    assert result.timed_out and result.killed == "wall timeout" and result.exit_code is None
    assert 1.0 <= result.wall_s < 15 and time.monotonic() - start < 30


def test_process_explosion_stops_at_the_pids_limit(box: Sandbox) -> None:
    result = box.run(["python", "fork_bomb.py"], timeout_s=30)
    made, error = result.stdout_tail.split()
    assert error == "BlockingIOError" and 0 < int(made) < LIMITS.pids
    assert "pids" in result.limits_hit


def test_memory_hog_stops_at_the_limit(box: Sandbox) -> None:
    result = box.run(["python", "memory_hog.py"], timeout_s=60)
    assert result.killed == "memory limit" and result.signal == signal.SIGKILL
    assert "never stopped" not in result.stdout_tail
    reached = int(result.stdout_tail.split()[-2])
    assert reached <= LIMITS.memory_bytes >> 20


def test_output_flood_is_cut_at_the_cap(box: Sandbox) -> None:
    result = box.run(["python", "flood.py"], timeout_s=60)
    assert result.killed == "output cap" and "not cut" not in result.stdout_tail
    assert LIMITS.output_bytes < result.stdout_bytes < 16 * LIMITS.output_bytes
    assert len(result.stdout_tail.encode()) <= 64 * 1024


def test_disk_fill_stops_at_the_tmpfs_size(box: Sandbox) -> None:
    result = box.run(["python", "disk_fill.py"], timeout_s=60)
    written, error = result.stdout_tail.split()
    assert error == "ENOSPC" and int(written) < LIMITS.disk_bytes >> 20


def test_a_candidate_streams_from_a_server_and_the_ledger_shows_it(box: Sandbox) -> None:
    server = box.serve("local", max_num_seqs=2, token_rate=400, seed=7)
    try:
        seen = run_json(box, ["stream.py", server["base_url"]])
        records = box.ledger("local")
        assert len(records) == 1 and records[0]["stream"] is True
        assert records[0]["completion_tokens"] == seen["chunks"] > 0

        reply = box.http(
            "POST",
            server["base_url"] + "/chat/completions",
            stream=True,
            timeout_s=20,
            json={
                "model": "fake-model",
                "messages": [{"role": "user", "content": "hi"}],
                "max_tokens": 5,
                "stream": True,
            },
        )
        assert reply["status"] == 200 and reply["error"] is None
        assert reply["events"][-1][1] == "[DONE]"
        times = [t for t, _ in reply["events"]]
        assert times == sorted(times)
        assert len(box.ledger("local")) == 2
    finally:
        box.stop_server("local")


# A client that sends one short request every `gap` seconds, `count` times, then sleeps `after` seconds (the
# standard library's client: it starts at once, even on a busy machine).
TRICKLE = """
import http.client, json, sys, time, urllib.parse
base, count, gap, after = sys.argv[1], int(sys.argv[2]), float(sys.argv[3]), float(sys.argv[4])
url = urllib.parse.urlsplit(base)
body = json.dumps({"model": "fake-model", "messages": [{"role": "user", "content": "hi"}], "max_tokens": 1})
for _ in range(count):
    connection = http.client.HTTPConnection(url.hostname, url.port, timeout=10)
    connection.request("POST", url.path + "/chat/completions", body, {"Content-Type": "application/json"})
    connection.getresponse().read()
    connection.close()
    time.sleep(gap)
time.sleep(after)
"""


def test_a_watched_command_runs_past_its_limit_only_while_its_server_finishes_requests(box: Sandbox) -> None:
    """A busy machine slows a correct client past its limit: while its fake server still finishes requests it
    runs on (`watch`), never past max_s; a client that finishes none for quiet_s is stopped."""
    server = box.serve("watched", token_rate=1000, seed=3)
    try:
        watch = {"server": "watched", "quiet_s": 2.0, "max_s": 8.0}
        argv = ["python", "-c", TRICKLE, server["base_url"]]
        # 10 requests 0.25 s apart: about 2.5 s, past a 1.5 s limit, each gap well inside quiet_s
        working = box.run([*argv, "10", "0.25", "0"], timeout_s=1.5, watch=watch)
        assert working.exit_code == 0 and working.killed is None, working
        assert 0 < working.extended_s < 6.5 and working.wall_s > 1.5
        # progress, then silence: stopped within quiet_s (and the pump's look) of its last finished request
        box.reset("watched")
        silent = box.run([*argv, "2", "0.25", "30"], timeout_s=1.5, watch={**watch, "quiet_s": 0.5})
        assert silent.killed == "wall timeout" and silent.wall_s < 1.5 + 0.5 + 1.0, silent
        # progress that never ends: stopped at max_s
        box.reset("watched")
        endless = box.run([*argv, "1000", "0.1", "0"], timeout_s=1.5, watch={**watch, "max_s": 3.0})
        assert endless.killed == "wall timeout" and 2.9 < endless.wall_s < 4.0, endless
        # not watched: stopped at its limit, whatever the server sees
        box.reset("watched")
        plain = box.run([*argv, "10", "0.25", "0"], timeout_s=1.5)
        assert plain.killed == "wall timeout" and plain.extended_s == 0 and plain.wall_s < 2.5, plain
    finally:
        box.stop_server("watched")


def test_spawned_server_is_reached_by_http_and_stopped(box: Sandbox) -> None:
    handle = box.spawn(["python", "-m", "http.server", "18731", "--bind", "127.0.0.1"], timeout_s=60)
    assert box.wait_port(18731, timeout_s=20)
    reply = box.http("GET", "http://127.0.0.1:18731/")
    assert reply["status"] == 200 and "daemon.py" in reply["body"]
    result = box.stop(handle)
    assert result.killed == "stopped"
    assert not box.wait_port(18731, timeout_s=0.2)


def test_waiting_for_a_port_ends_when_the_command_that_was_to_listen_is_gone(box: Sandbox) -> None:
    """A command that exits without listening is not waited on for the whole start limit; one whose child
    lives on (it may still listen) is."""
    handle = box.spawn(["python", "-c", "import sys; sys.exit('no port today')"], timeout_s=60)
    started = time.monotonic()
    assert not box.wait_port(18732, timeout_s=30, handle=handle)
    assert time.monotonic() - started < 15
    assert box.stop(handle).exit_code == 1
    lingering = "import subprocess, sys; subprocess.Popen(['sleep', '30']); sys.exit(0)"
    handle = box.spawn(["python", "-c", lingering], timeout_s=60)
    started = time.monotonic()
    assert not box.wait_port(18732, timeout_s=1.0, handle=handle)
    assert time.monotonic() - started >= 1.0
    box.stop(handle)
    with pytest.raises(SandboxError, match="no spawned command 'nobody'"):
        box.wait_port(18732, timeout_s=1.0, handle="nobody")


def test_files_come_back_only_from_the_work_folder(box: Sandbox) -> None:
    result = box.run(
        ["true"], timeout_s=10, files_back=["results/keep.json", "results/escape.json", "results/none.json"]
    )
    assert result.files == {
        "results/keep.json": '{"kept": true}\n',
        "results/escape.json": None,
        "results/none.json": None,
    }


def test_bad_requests_are_errors_and_the_sandbox_lives_on(box: Sandbox) -> None:
    with pytest.raises(SandboxError, match="host"):
        box.serve("x", host="0.0.0.0")
    with pytest.raises(SandboxError, match="cwd"):
        box.run(["true"], timeout_s=5, cwd="../etc")
    with pytest.raises(SandboxError, match="loopback"):
        box.http("GET", "http://192.0.2.1/")
    with pytest.raises(SandboxError, match="no server"):
        box.ledger("nobody")
    assert box.run(["true"], timeout_s=10).exit_code == 0


def _sandbox_cgroups() -> list[str]:
    """This process's sandbox cgroup folders, in every hierarchy it is in."""
    found = []
    own = _own_paths()
    for fstype, root, mount, options in _mounts():
        for controller in ("pids", "memory", ""):
            if (controller in options or (fstype == "cgroup2" and controller == "")) and controller in own:
                rel = own[controller][len(root) :] if root != "/" else own[controller]
                folder = Path(mount) / rel.lstrip("/")
                if folder.is_dir():
                    found += [str(p) for p in folder.glob(f"grader-sandbox-{os.getpid()}-*")]
    return found


def _alive(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] not in ("Z", "X")
    except OSError:
        return False


def _descendants(pid: int) -> list[int]:
    children: dict[int, list[int]] = {}
    for name in os.listdir("/proc"):
        if name.isdigit():
            try:
                stat = Path(f"/proc/{name}/stat").read_text()
            except OSError:
                continue
            ppid = int(stat.rsplit(")", 1)[1].split()[1])
            children.setdefault(ppid, []).append(int(name))
    out, todo = [], [pid]
    while todo:
        for child in children.get(todo.pop(), []):
            out.append(child)
            todo.append(child)
    return out


def test_nothing_is_left_after_the_context_exits(host: dict[str, Path]) -> None:
    before = set(_sandbox_cgroups())
    with Sandbox(host["submission"], limits=LIMITS) as sandbox:
        assert sandbox._proc is not None  # started by entering the context
        bwrap_pid = sandbox._proc.pid
        assert set(_sandbox_cgroups()) - before
        sandbox.serve("s", seed=3)
        handle = sandbox.spawn(["python", "daemon.py", "leftover-marker-55", "/tmp/work/flag"], timeout_s=60)
        deadline = time.monotonic() + 20
        while _outer_hits("leftover-marker-55") == 0 and time.monotonic() < deadline:
            time.sleep(0.05)
        if _outer_hits("leftover-marker-55") == 0:  # say what the daemon's parent printed, if it never showed
            ended = sandbox.stop(handle)
            pytest.fail(
                f"no daemon after 20 s: exit {ended.exit_code}, {ended.killed}, "
                f"out {ended.stdout_tail!r}, err {ended.stderr_tail!r}"
            )
        del handle  # closed without stopping it: close() must end it anyway
        inside = _descendants(bwrap_pid)
        assert len(inside) >= 3  # bwrap's init, the harness, the daemon at least
    # A zombie is dead (no memory, no port, no cgroup); bubblewrap's init is left for the host's init to reap.
    assert [pid for pid in [bwrap_pid, *inside] if _alive(pid)] == []
    assert _outer_hits("leftover-marker-55") == 0
    assert set(_sandbox_cgroups()) - before == set()


def test_unsandboxed_mode_says_so_and_cleans_up(host: dict[str, Path]) -> None:
    with Sandbox(host["submission"], limits=LIMITS, isolate=False) as sandbox:
        assert not sandbox.isolated and sandbox.note.startswith("UNSANDBOXED:")
        result = sandbox.run(["python", "-c", "import os; print(os.getcwd())"], timeout_s=20)
        work = Path(result.stdout_tail.strip())
        assert result.exit_code == 0 and (work / "probe.py").is_file()
    assert not work.exists() and not work.parent.exists()


def test_run_result_round_trips() -> None:
    result = RunResult(
        exit_code=0,
        timed_out=False,
        killed=None,
        stdout_tail="a",
        stderr_tail="",
        stdout_bytes=1,
        stderr_bytes=0,
        wall_s=0.1,
    )
    assert RunResult.from_dict(result.to_dict()) == result and result.ok


def test_injected_files_and_env_are_all_the_candidate_gets(box: Sandbox) -> None:
    os.environ["SANDBOX_OUTER_ONLY"] = SECRET
    try:
        script = (
            "import os, plugin_probe; print(plugin_probe.VALUE, os.environ.get('GIVEN'), "
            "os.environ.get('SANDBOX_OUTER_ONLY'), os.environ['TMPDIR'], os.environ['HOME']); "
            "open(plugin_probe.__file__, 'a')"
        )
        result = box.run(
            ["python", "-c", script], timeout_s=20, env={"GIVEN": "yes"}, inject={"plugin_probe.py": "VALUE = 42\n"}
        )
    finally:
        del os.environ["SANDBOX_OUTER_ONLY"]
    assert result.stdout_tail.split() == ["42", "yes", "None", "/tmp/tmp", "/tmp/home"]
    assert "PermissionError" in result.stderr_tail  # the injected file is the grader's, read-only to the candidate


def test_cpu_limit_and_a_dead_harness(host: dict[str, Path]) -> None:
    with Sandbox(host["submission"], limits=Limits(cpu_s=1)) as sandbox:
        result = sandbox.run(["python", "-c", "while True: pass"], timeout_s=30)
        assert result.killed == "cpu limit" and "cpu" in result.limits_hit and result.wall_s < 25
        assert sandbox._proc is not None  # started by entering the context
        harness = [
            pid
            for pid in _descendants(sandbox._proc.pid)
            if Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")[1:3] == [b"-m", b"grader.sandbox.harness"]
        ]
        assert len(harness) == 1
        os.kill(harness[0], signal.SIGKILL)
        with pytest.raises(SandboxError, match="ended unexpectedly|not running"):
            sandbox.run(["true"], timeout_s=5)


def test_an_installed_wheel_hides_the_grader_inside_the_venv(tmp_path: Path) -> None:
    from grader.sandbox.layout import KitPaths, bwrap_argv

    site = tmp_path / "venv/lib/python3.11/site-packages"
    chart = site / "grader/_kit/chart"
    kit = KitPaths(
        fake_server=site / "fake_server",
        grader=site / "grader",
        python_prefixes=(tmp_path / "venv",),
        python_bin=tmp_path / "venv/bin",
        extras=(chart,),
    )
    argv = bwrap_argv("bwrap", kit, tmp_path / "sub", disk_bytes=1 << 20, cgroups={}, python="python")
    pairs = list(itertools.pairwise(argv))
    assert ("--ro-bind", str(tmp_path / "venv")) in pairs and ("--ro-bind", str(site / "fake_server")) not in pairs
    # The empty tmpfs over the grader must come after the venv's bind, or the bind would uncover it.
    assert pairs.index(("--tmpfs", str(site / "grader"))) > pairs.index(("--ro-bind", str(tmp_path / "venv")))
    assert ("--ro-bind", str(site / "grader")) in pairs  # the harness's copy, under the 0700 folder
    # The kit's chart inside the hidden package is shown again, read-only, after the tmpfs.
    assert pairs.index(("--ro-bind", str(chart))) > pairs.index(("--tmpfs", str(site / "grader")))
    assert ("--ro-bind", str(site / "grader/_kit")) not in pairs


def test_a_kit_installed_where_the_sandbox_makes_its_folders_is_refused_with_where_to_install_it(
    tmp_path: Path,
) -> None:
    """A virtual environment under /tmp/inject (or /tmp/work...) is bound at its real path inside the sandbox,
    where the harness makes that folder: the sandbox refuses to open and says so, rather than every run
    failing with "File exists" from inside."""
    inject = Path("/tmp/inject")
    made_inject = not inject.exists()
    venv = inject / f"kit-{uuid.uuid4().hex[:8]}" / "venv"
    try:
        subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
        site = next(venv.glob("lib/python*/site-packages"))  # this kit's packages, as an editable install sees them
        (site / "kit.pth").write_text(f"import site; site.addsitedir({sysconfig.get_paths()['purelib']!r})\n")
        (tmp_path / "sub").mkdir()
        probe = (
            f"from grader.sandbox import Sandbox, SandboxRefused\n"
            f"try:\n    Sandbox({str(tmp_path / 'sub')!r}).open()\n"
            f"except SandboxRefused as exc:\n    print('REFUSED', exc)\n"
        )
        done = subprocess.run(
            [str(venv / "bin" / "python"), "-c", probe], capture_output=True, text=True, timeout=60, check=False
        )
    finally:
        shutil.rmtree(inject if made_inject else venv.parent, ignore_errors=True)
    assert done.stdout.startswith("REFUSED the kit lives at /tmp/inject/"), done.stdout + done.stderr
    assert "/tmp/work" in done.stdout and "install it" in done.stdout


def test_only_the_stub_client_is_on_the_path_not_the_starters_skeleton_packages(tmp_path: Path) -> None:
    """A submission whose loadgen/ has no __init__.py must not merge with the starter's loadgen/."""
    sub = tmp_path / "sub"
    (sub / "loadgen").mkdir(parents=True)
    (sub / "loadgen" / "mine.py").write_text("X = 1\n")
    probe = "import api_client, loadgen\nprint(sorted(loadgen.__path__), api_client.__name__)\n"
    with Sandbox(sub) as box:
        result = box.run(["python", "-c", probe], timeout_s=30)
    assert result.exit_code == 0, result.stderr_tail
    assert "starter" not in result.stdout_tail and "api_client" in result.stdout_tail
