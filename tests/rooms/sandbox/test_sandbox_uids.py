"""A uid of its own for each sandbox whose process limit RLIMIT_NPROC holds: leased by a lock, never one
that a process runs as or that the user namespace does not map, and free again once released."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from grader.sandbox import uids

needs_root = pytest.mark.skipif(os.geteuid() != 0, reason="starting a process as another uid needs root")


def test_two_leases_differ_and_a_released_uid_is_leased_again(tmp_path: Path) -> None:
    first = uids.lease(lambda uid: "", locks=tmp_path)
    second = uids.lease(lambda uid: "", locks=tmp_path)
    assert first is not None and second is not None
    assert uids.FIRST <= first.uid < second.uid <= uids.LAST
    first.release()
    again = uids.lease(lambda uid: "", locks=tmp_path)
    assert again is not None and again.uid == first.uid
    second.release()
    again.release()


def test_a_lease_held_by_another_process_is_not_given(tmp_path: Path) -> None:
    """The lock is what graders in separate processes agree on."""
    held = subprocess.Popen(
        [
            sys.executable,
            "-c",
            (
                "import sys; from pathlib import Path; from grader.sandbox import uids; "
                f"lease = uids.lease(lambda uid: '', locks=Path({str(tmp_path)!r})); print(lease.uid, flush=True); "
                "sys.stdin.read()"
            ),
        ],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert held.stdout is not None
        theirs = int(held.stdout.readline())
        mine = uids.lease(lambda uid: "", locks=tmp_path)
        assert mine is not None and mine.uid != theirs
        mine.release()
    finally:
        held.communicate("", timeout=10)
    after = uids.lease(lambda uid: "", locks=tmp_path)  # its lock went with its process
    assert after is not None and after.uid == theirs
    after.release()


@needs_root
def test_a_uid_a_process_runs_as_or_the_namespace_does_not_map_is_skipped(tmp_path: Path) -> None:
    free = uids.lease(lambda uid: "", locks=tmp_path / "probe")
    assert free is not None
    free.release()
    sleeper = subprocess.Popen(["sleep", "30"], user=free.uid)
    try:
        lease = uids.lease(lambda uid: "", locks=tmp_path)
        assert lease is not None and lease.uid != free.uid
        lease.release()
    finally:
        sleeper.kill()
        sleeper.wait()
    lease = uids.lease(lambda uid: "" if uid > free.uid + 1 else "not mapped", locks=tmp_path)
    assert lease is not None and lease.uid > free.uid + 1
    lease.release()
    assert uids.lease(lambda uid: "not mapped", locks=tmp_path) is None


def test_where_no_lease_can_be_taken_there_is_none_and_no_traceback(tmp_path: Path) -> None:
    """The sandbox then keeps 65534, as it would have without leases."""
    assert uids.lease(lambda uid: "", locks=Path("/proc/self/no-such-folder")) is None
    (tmp_path / "not-a-folder").write_text("")
    assert uids.lease(lambda uid: "", locks=tmp_path / "not-a-folder") is None
