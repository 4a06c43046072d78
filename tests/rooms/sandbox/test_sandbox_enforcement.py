"""What holds each limit, said in one line: the holders for every kind of host, the sandbox's note,
the warning that opens every report when nothing holds a limit, the refusal where the candidate's
uid is not mapped, and the cgroup v2 controllers. No sandbox is started here; tests/hostile/ has the
rows themselves (test_sandbox_rows.py, test_hostile_matrix.py).
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest
from report_samples import sample_grade

from grader.outcome import Grade
from grader.reports import score_table, to_gradescope, to_junit
from grader.reports.html import to_html
from grader.reports.text import sandbox_warning, summary_lines
from grader.sandbox import Sandbox, userns
from grader.sandbox.cgroups import SandboxCgroups, _delegate
from grader.sandbox.enforcement import NOT_ENFORCED, Enforcement
from grader.sandbox.protocol import Limits

V1 = SandboxCgroups(1, {"pids": Path("/cg/pids/s"), "memory": Path("/cg/memory/s")}, ("pids", "memory"))
V1_PIDS_ONLY = SandboxCgroups(
    1, {"pids": Path("/cg/pids/s")}, ("pids",), "cannot create /cg/memory/s (Permission denied)"
)
V2_BARE = SandboxCgroups(2, {"unified": Path("/cg/s")}, (), "cgroup v2 has no pids or memory controller under /cg")
NO_CGROUP = SandboxCgroups(why="cannot create /cg/pids/s (Read-only file system)")
SWEEP = "a sweep of the candidate's uid"


@pytest.mark.parametrize(
    ("cgroups", "run_as", "rlimits", "processes", "memory", "cleanup"),
    [
        (V1, 65534, True, "cgroup v1", "cgroup v1", "cgroup v1"),
        (V1_PIDS_ONLY, 65534, True, "cgroup v1", "rlimit", "cgroup v1"),
        (V2_BARE, 65534, True, "rlimit", "rlimit", "cgroup v2"),
        (NO_CGROUP, 65534, True, "rlimit", "rlimit", SWEEP),
        (NO_CGROUP, None, True, "none", "rlimit", "none"),  # not root: no uid of its own to count or sweep
        (NO_CGROUP, 65534, False, "none", "none", SWEEP),  # no prlimit
    ],
    ids=["v1", "v1-pids-only", "v2-no-controllers", "no-cgroup", "not-root", "no-prlimit"],
)
def test_each_host_names_what_holds_each_limit(
    cgroups: SandboxCgroups, run_as: int | None, rlimits: bool, processes: str, memory: str, cleanup: str
) -> None:
    enforcement = Enforcement(cgroups, run_as=run_as, rlimits=rlimits, isolated=True)
    holders = enforcement.holders()
    assert (holders["processes"], holders["memory"], holders["cleanup"]) == (processes, memory, cleanup)
    assert holders["output"] == "the harness" and holders["disk"] == "tmpfs"
    unenforced = [item.split(" (", 1)[0] for item in enforcement.unenforced()]
    assert unenforced == [name for name, holder in holders.items() if holder == "none"]
    line = enforcement.line(Limits())
    assert f"processes 256 by {processes}" in line and f"memory 2048 MiB by {memory}" in line
    assert f"killed at its end by {cleanup}" in line
    assert (cgroups.why in line) and "\n" not in line


def test_the_note_opens_with_what_nothing_holds(tmp_path: Path) -> None:
    box = Sandbox(tmp_path)
    box.enforcement = Enforcement(NO_CGROUP, run_as=None, rlimits=True, isolated=True)
    note = box._describe(True, "bubblewrap 0.8.0", None)
    assert note.startswith(f"{NOT_ENFORCED} processes (the grader is not root")
    assert "cleanup (no cgroup and no uid of its own" in note and "bubblewrap 0.8.0: own network" in note
    box.enforcement = Enforcement(V1, run_as=65534, rlimits=True, isolated=True)
    assert box._describe(True, "bubblewrap 0.8.0", 65534).startswith("bubblewrap 0.8.0: own network")
    assert box._describe(False, "bwrap is not installed", None).startswith("UNSANDBOXED: bwrap is not installed")


def _graded(note: str) -> Grade:
    return dataclasses.replace(sample_grade(sandboxed=True), sandbox_note=note)


def test_a_limit_nothing_held_opens_every_report_as_unsandboxed_does() -> None:
    note = f"{NOT_ENFORCED} processes (the grader is not root). bubblewrap 0.8.0: own network (loopback only)"
    grade = _graded(note)
    assert sandbox_warning(grade) == note
    assert summary_lines(grade)[0] == note
    assert not any(line.startswith("Sandbox:") for line in summary_lines(grade))  # said once, at the top
    assert score_table(grade).splitlines()[0] == note
    assert to_gradescope(grade)["output"].splitlines()[0] == note
    page = to_html(grade)
    assert page.split("<body>", 1)[1].startswith('<div class="banner unsandboxed" id="sandbox">NOT ENFORCED: ')
    assert "<title>NOT ENFORCED Grade " in page
    junit = to_junit(grade)
    assert junit.splitlines()[1].startswith("<!-- NOT ENFORCED: ") and 'name="NOT ENFORCED grade of ' in junit


def test_a_fully_held_line_is_the_sandbox_line_not_a_warning() -> None:
    grade = _graded("bubblewrap 0.8.0: own network (loopback only); limits: processes 256 by cgroup v1")
    assert sandbox_warning(grade) == ""
    assert summary_lines(grade)[0].startswith("Score ")
    assert any(line.startswith("Sandbox: bubblewrap 0.8.0: own network") for line in summary_lines(grade))
    assert 'class="banner sandboxed"' in to_html(grade) and "NOT ENFORCED" not in to_junit(grade)


def test_an_unmapped_candidate_uid_is_refused_in_one_line(monkeypatch: pytest.MonkeyPatch) -> None:
    assert userns.unmapped(65534) == ""  # this machine: every uid exists, or a range that holds it
    maps = {"uid": [(0, 0, 1)], "gid": [(0, 100000, 65536)]}
    monkeypatch.setattr(userns, "id_ranges", lambda kind: maps[kind])
    why = userns.unmapped(65534)
    assert "\n" not in why and "uid 65534 is not mapped in this user namespace (it maps uids 0)" in why
    assert "hostUsers: false" in why and "no candidate code was run" in why
    maps["gid"] = [(0, 0, 1), (5, 1005, 10)]
    assert (
        "uid and gid 65534 are not mapped in this user namespace (it maps uids 0 and gids 0, 5-14)"
        in userns.unmapped(65534)
    )


def test_v2_controllers_are_used_only_where_the_parent_offers_them(tmp_path: Path) -> None:
    """_delegate on a folder standing in for a cgroup2 parent: its cgroup.controllers decides."""
    parent, folder = tmp_path, tmp_path / "grader-sandbox-1-1"
    folder.mkdir()
    (parent / "cgroup.controllers").write_text("hugetlb\n")
    usable, why = _delegate(parent, folder)
    assert usable == () and f"cgroup v2 has no pids or memory controller under {parent} (it offers: hugetlb)" == why
    (parent / "cgroup.controllers").write_text("cpu memory pids\n")
    (parent / "cgroup.subtree_control").write_text("cpu\n")
    usable, why = _delegate(parent, folder)
    assert usable == ("pids", "memory") and why == ""
    assert (parent / "cgroup.subtree_control").read_text() == "+pids +memory"
    assert (folder / "cgroup.subtree_control").read_text() == "+pids +memory"
