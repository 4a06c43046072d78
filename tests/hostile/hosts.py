"""The ways the grader can be hosted, emulated on one root machine: the rows of the hostile matrix.

    python tests/hostile/hosts.py ROW [--caps CAP,CAP...] [--masked-proc] -- COMMAND...

runs COMMAND (a `grader grade`, a script opening a Sandbox) as it would run on that kind of host.
Each row is made of namespaces of this wrapper's own, which end with COMMAND: nothing on the
machine changes, and nothing needs undoing. COMMAND keeps the wrapper's pid.

| row            | how it is made here                                   | stands for                                      |
| -------------- | ----------------------------------------------------- | ----------------------------------------------- |
| `cgroup-v1`    | nothing: the machine as it is                         | root, cgroup v1 pids and memory writable        |
| `cgroup-v2`    | a mount namespace whose /sys/fs/cgroup is a cgroup2   | a cgroup v2 host; this one's v2 hierarchy has    |
|                | mount (the v1 mounts detached there)                  | no pids or memory controller (v1 holds them)    |
| `cgroups-ro`   | a mount namespace with every cgroup mount read-only   | a container with no writable cgroup             |
| `userns-65536` | a user namespace mapping 0-65535 to 100000-165535,     | a Kubernetes pod with `hostUsers: false`        |
|                | and a mount namespace                                 |                                                 |
| `userns-root`  | a user namespace mapping root alone (to root), and a  | `unshare --user --map-root-user --mount`        |
|                | mount namespace                                       |                                                 |

`userns-65536` is what `unshare --user --map-users=100000,0,65536 --map-groups=100000,0,65536
--setuid 0 --setgid 0 --mount` makes, without Debian's uidmap or entries in /etc/subuid: the
wrapper is root outside, so a child of it writes the maps itself. The mapped root cannot enter
this machine's /root (0700), where the test's Python is installed; in that row the interpreter's
installation is bound into a tmpfs over /root, as an image's own Python is readable in a pod.
Folders the grader reads and writes there must belong to the mapped root (`ROWS[row].owner`).

`--caps` keeps only the named capabilities (the bounding set, so root holds just these after exec)
and sets no_new_privs, as a pod's `capabilities: {drop: [ALL], add: [...]}` and
`allowPrivilegeEscalation: false` do. `--masked-proc` masks /proc as a container runtime does
unless a pod asks for `procMount: Unmasked` (/dev/null over /proc/kcore, /proc/keys and
/proc/timer_list, /proc/sys read-only).

`unavailable(row)` says why a row cannot be made here (not root, no user namespaces, bubblewrap
missing inside it), so that its tests are skipped with the reason.
"""

from __future__ import annotations

import ctypes
import functools
import json
import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

CLONE_NEWNS = 0x00020000
CLONE_NEWUSER = 0x10000000
MS_RDONLY, MS_NOSUID, MS_NODEV, MS_NOEXEC = 0x1, 0x2, 0x4, 0x8
MS_REMOUNT, MS_BIND, MS_REC, MS_PRIVATE = 0x20, 0x1000, 0x4000, 0x40000
MNT_DETACH = 0x2
PR_CAPBSET_DROP, PR_SET_NO_NEW_PRIVS = 24, 38
CAPABILITIES = [
    "CHOWN",
    "DAC_OVERRIDE",
    "DAC_READ_SEARCH",
    "FOWNER",
    "FSETID",
    "KILL",
    "SETGID",
    "SETUID",
    "SETPCAP",
    "LINUX_IMMUTABLE",
    "NET_BIND_SERVICE",
    "NET_BROADCAST",
    "NET_ADMIN",
    "NET_RAW",
    "IPC_LOCK",
    "IPC_OWNER",
    "SYS_MODULE",
    "SYS_RAWIO",
    "SYS_CHROOT",
    "SYS_PTRACE",
    "SYS_PACCT",
    "SYS_ADMIN",
    "SYS_BOOT",
    "SYS_NICE",
    "SYS_RESOURCE",
    "SYS_TIME",
    "SYS_TTY_CONFIG",
    "MKNOD",
    "LEASE",
    "AUDIT_WRITE",
    "AUDIT_CONTROL",
    "SETFCAP",
    "MAC_OVERRIDE",
    "MAC_ADMIN",
    "SYSLOG",
    "WAKE_ALARM",
    "BLOCK_SUSPEND",
    "AUDIT_READ",
    "PERFMON",
    "BPF",
    "CHECKPOINT_RESTORE",
]
CGROUP = Path("/sys/fs/cgroup")
HERE = Path(__file__).resolve()


@dataclass(frozen=True)
class Row:
    name: str
    stands_for: str
    owner: int = 0  # the host uid of the row's root: folders the grader uses there must be its
    uid_map: str = ""  # written for the row's user namespace; none when empty


ROWS = {
    row.name: row
    for row in [
        Row("cgroup-v1", "root with cgroup v1 (pids and memory controllers writable)"),
        Row("cgroup-v2", "root with a cgroup2 mount at /sys/fs/cgroup (no pids or memory controller in it here)"),
        Row("cgroups-ro", "root with every cgroup mount read-only (rlimits only)"),
        Row(
            "userns-65536",
            "an unprivileged user namespace mapping 65,536 uids (a pod with hostUsers: false)",
            owner=100000,
            uid_map="0 100000 65536",
        ),
        Row("userns-root", "an unprivileged user namespace mapping root alone", uid_map="0 0 1"),
    ]
}


def command(row: str, argv: list[str], *, caps: list[str] | None = None, masked_proc: bool = False) -> list[str]:
    """The command line running argv in the given row."""
    options = (["--caps", ",".join(caps)] if caps is not None else []) + (["--masked-proc"] if masked_proc else [])
    return [sys.executable, str(HERE), row, *options, "--", *argv]


_PROBE = """
import json, os
from pathlib import Path
from grader.sandbox import isolation_available
from grader.sandbox.cgroups import create_sandbox_cgroups, remove_tree
ok, why = isolation_available()
made = create_sandbox_cgroups(f"grader-probe-{os.getpid()}")
remove_tree(made.folders.values())
print(json.dumps({"bwrap": why if not ok else "", "uid_map": " ".join(Path("/proc/self/uid_map").read_text().split()),
                  "cgroups": [made.version, sorted(made.controllers), made.why]}))
"""
# What the sandbox must find in each row: (cgroup version, controllers that limit).
_CGROUPS = {
    "cgroup-v1": [1, ["memory", "pids"]],
    "cgroup-v2": [2, []],
    "cgroups-ro": [None, []],
    "userns-65536": [None, []],
}


@functools.cache
def unavailable(row: str) -> str:
    """Why `row` cannot be made on this machine, or is not what it stands for here (empty when it can)."""
    if not sys.platform.startswith("linux"):
        return "namespaces need Linux"
    if os.geteuid() != 0:
        return "the rows are made by root (mount and user namespaces, uid maps)"
    try:
        done = subprocess.run(
            command(row, [sys.executable, "-c", _PROBE]),
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
            cwd=HERE.parents[2],
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        return f"the {row} row could not be made ({exc})"
    if done.returncode != 0:
        return f"the {row} row could not be made: {(done.stderr.strip().splitlines() or ['no message'])[-1]}"
    seen = json.loads(done.stdout.strip().splitlines()[-1])
    if seen["bwrap"]:
        return f"bubblewrap cannot make namespaces in the {row} row: {seen['bwrap']}"
    wanted = ROWS[row].uid_map or "0 0 4294967295"
    if seen["uid_map"] != wanted:
        return f"the {row} row maps {seen['uid_map']!r}, not {wanted!r}"
    if row in _CGROUPS and seen["cgroups"][:2] != _CGROUPS[row]:
        version, controllers, why = seen["cgroups"]
        return (
            f"the sandbox finds cgroup v{version} with {controllers or 'no'} controllers in the {row} row "
            f"({why or 'no reason given'}), not what the row stands for"
        )
    return ""


# -- the wrapper itself (run as a script) ----------------------------------------------------------

_libc = ctypes.CDLL(None, use_errno=True)


def _check(rc: int, what: str) -> None:
    if rc != 0:
        err = ctypes.get_errno()
        raise OSError(err, f"{what}: {os.strerror(err)}")


def _unshare(flags: int) -> None:
    _check(_libc.unshare(flags), "unshare")


def _mount(source: str | None, target: str, fstype: str | None, flags: int, data: str | None = None) -> None:
    def c(text: str | None) -> bytes | None:
        return text.encode() if text is not None else None

    _check(_libc.mount(c(source), c(target), c(fstype), ctypes.c_ulong(flags), c(data)), f"mount {target}")


def _cgroup_mounts() -> list[tuple[str, int]]:
    """(mount point, nosuid/nodev/noexec flags) of every cgroup and cgroup2 mount."""
    out = []
    for line in Path("/proc/self/mountinfo").read_text().splitlines():
        left, _, right = line.partition(" - ")
        fields = left.split()
        if right.split()[0] in ("cgroup", "cgroup2"):
            options = fields[5].split(",")
            flags = sum(
                bit
                for name, bit in (("nosuid", MS_NOSUID), ("nodev", MS_NODEV), ("noexec", MS_NOEXEC))
                if name in options
            )
            out.append((fields[4], flags))
    return out


def _private_mounts() -> None:
    _unshare(CLONE_NEWNS)
    _mount(None, "/", None, MS_REC | MS_PRIVATE)


def _cgroup_v2() -> None:
    _private_mounts()
    _check(_libc.umount2(str(CGROUP).encode(), MNT_DETACH), f"umount {CGROUP}")
    _mount("cgroup2", str(CGROUP), "cgroup2", MS_NOSUID | MS_NODEV | MS_NOEXEC)


def _cgroups_read_only() -> None:
    _private_mounts()
    for point, flags in _cgroup_mounts():
        _mount(None, point, None, MS_REMOUNT | MS_BIND | MS_RDONLY | flags)


def _closed_ancestor(path: Path) -> Path | None:
    """The outermost folder above `path` that others may not enter, if any."""
    for parent in reversed(path.parents):
        if parent != Path("/") and not os.stat(parent).st_mode & 0o001:
            return parent
    return None


def _user_namespace(row: Row) -> None:
    """Enter a new user and mount namespace, mapped as the row says, as its root."""
    python = Path(os.path.realpath(sys.executable)).parent.parent  # the interpreter's own installation
    closed = _closed_ancestor(python) if row.owner else None
    ready_r, ready_w = os.pipe()
    child = os.fork()
    if child == 0:  # still root outside: write the parent's maps, as newuidmap would
        os.close(ready_w)
        os.read(ready_r, 1)
        parent = os.getppid()
        try:
            if row.uid_map == "0 0 1":  # as unshare --map-root-user
                Path(f"/proc/{parent}/setgroups").write_text("deny")
            Path(f"/proc/{parent}/uid_map").write_text(row.uid_map)
            Path(f"/proc/{parent}/gid_map").write_text(row.uid_map)
        except OSError as exc:
            print(f"hosts.py: cannot write the uid map: {exc}", file=sys.stderr)
            os._exit(1)
        os._exit(0)
    os.close(ready_r)
    _unshare(CLONE_NEWUSER | CLONE_NEWNS)
    os.write(ready_w, b"1")
    os.close(ready_w)
    _, status = os.waitpid(child, 0)
    if os.waitstatus_to_exitcode(status) != 0:
        raise SystemExit("hosts.py: the uid map was not written")
    _mount(None, "/", None, MS_REC | MS_PRIVATE)
    # Opened in the new mount namespace (a bind's source must be in it), before becoming the
    # mapped root: until then this process is still root outside, the owner of `closed`.
    held = os.open(python, os.O_PATH) if closed is not None else None
    if row.uid_map != "0 0 1":
        os.setgroups([])
    os.setresgid(0, 0, 0)
    os.setresuid(0, 0, 0)
    if closed is not None and held is not None:
        _mount("tmpfs", str(closed), "tmpfs", MS_NOSUID | MS_NODEV, "mode=0755")
        python.mkdir(parents=True)
        _mount(f"/proc/self/fd/{held}", str(python), None, MS_BIND | MS_REC)
        _mount(None, str(python), None, MS_REMOUNT | MS_BIND | MS_RDONLY | MS_NOSUID | MS_NODEV)
        os.close(held)


def _mask_proc() -> None:
    """/proc as runc's defaults leave it: a few files hidden under /dev/null, /proc/sys read-only."""
    for path in ("/proc/kcore", "/proc/keys", "/proc/timer_list"):
        if os.path.exists(path):
            _mount("/dev/null", path, None, MS_BIND)
    _mount("/proc/sys", "/proc/sys", None, MS_BIND | MS_REC)
    _mount(None, "/proc/sys", None, MS_REMOUNT | MS_BIND | MS_RDONLY | MS_NOSUID | MS_NODEV | MS_NOEXEC)


def _keep_capabilities(names: list[str]) -> None:
    unknown = [n for n in names if n not in CAPABILITIES]
    if unknown:
        raise SystemExit(f"hosts.py: unknown capabilities {unknown}")
    last = int(Path("/proc/sys/kernel/cap_last_cap").read_text())
    for number in range(last + 1):
        if number >= len(CAPABILITIES) or CAPABILITIES[number] not in names:
            _check(_libc.prctl(PR_CAPBSET_DROP, ctypes.c_ulong(number), 0, 0, 0), f"drop capability {number}")
    _check(_libc.prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0), "no_new_privs")


def main(args: list[str]) -> None:
    if "--" not in args or not args or args[0] not in ROWS:
        raise SystemExit(f"usage: hosts.py {{{','.join(ROWS)}}} [--caps CAP,...] [--masked-proc] -- COMMAND...")
    split = args.index("--")
    row, options, argv = ROWS[args[0]], args[1:split], args[split + 1 :]
    caps = options[options.index("--caps") + 1].split(",") if "--caps" in options else None
    if row.name == "cgroup-v2":
        _cgroup_v2()
    elif row.name == "cgroups-ro":
        _cgroups_read_only()
    elif row.uid_map:
        _user_namespace(row)
    if "--masked-proc" in options:
        if not row.uid_map:
            _private_mounts()
        _mask_proc()
    if caps is not None:
        _keep_capabilities([c for c in caps if c])
    os.execvp(argv[0], argv)


if __name__ == "__main__":
    main(sys.argv[1:])
