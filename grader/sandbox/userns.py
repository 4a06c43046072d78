"""Whether the candidate's uid exists in the user namespace the grader runs in.

The candidate runs as uid and gid 65534, apart from the harness (root), so that it can neither
signal the harness and the fake servers nor read their files and /proc entries. Outside a user
namespace every uid exists. Inside one, only the mapped uids do: a Kubernetes pod with
`hostUsers: false` maps 65,536 (0-65535), as do rootless podman with subordinate ids and
`unshare --map-users=100000,0,65536`; `unshare --map-root-user` maps root alone. Where 65534 is
not mapped, nothing can be given to it (chown fails with EINVAL) and no process can become it.

Running the candidate as the namespace's root instead would give it the harness's own uid: it
could kill the harness and read the unseen material. A nested namespace cannot hide them either,
since a second bubblewrap cannot mount its /proc under the first one's. So the sandbox refuses,
with the line `unmapped` returns, and runs nothing.
"""

from __future__ import annotations

from pathlib import Path

__all__ = ["id_ranges", "unmapped"]


def id_ranges(kind: str) -> list[tuple[int, int, int]]:
    """(first id inside, first id outside, count) of each line of /proc/self/{kind}_map ("uid" or "gid")."""
    ranges = []
    for line in Path(f"/proc/self/{kind}_map").read_text().splitlines():
        fields = line.split()
        if len(fields) == 3 and all(f.isdigit() for f in fields):
            ranges.append((int(fields[0]), int(fields[1]), int(fields[2])))
    return ranges


def _describe(ranges: list[tuple[int, int, int]]) -> str:
    if not ranges:
        return "none"
    return ", ".join(str(first) if count == 1 else f"{first}-{first + count - 1}" for first, _, count in ranges)


def unmapped(uid: int) -> str:
    """Why `uid` (as uid and as gid) cannot be used here, in one line; empty when it can."""
    missing, maps = [], []
    for kind in ("uid", "gid"):
        try:
            ranges = id_ranges(kind)
        except OSError:
            continue  # no /proc/self/*_map: no user namespaces, every id exists
        if not any(first <= uid < first + count for first, _, count in ranges):
            missing.append(kind)
            maps.append(f"{kind}s {_describe(ranges)}")
    if not missing:
        return ""
    return (
        f"cannot give the candidate an id of its own, so no candidate code was run: {' and '.join(missing)} {uid} "
        f"{'are' if len(missing) > 1 else 'is'} not mapped in this user namespace (it maps {' and '.join(maps)}). "
        "Map it: a Kubernetes pod with hostUsers: false maps 65,536 uids; elsewhere run the grader under "
        "`unshare --user --map-users=100000,0,65536 --map-groups=100000,0,65536 --setuid 0 --setgid 0` "
        "(Debian's uidmap, with root:100000:65536 in /etc/subuid and /etc/subgid) or rootless podman "
        "with subordinate ids"
    )
