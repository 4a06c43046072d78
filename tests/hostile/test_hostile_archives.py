"""Hostile archives graded end to end: `grader grade x.tar.gz` refuses each by name in a report
(exit 0, every criterion skipped with the reason), writes nothing outside, and leaves no
temporary folder. The unpacker's rules themselves are tested in tests/rooms/grading/test_archive.py.
"""

from __future__ import annotations

import io
import json
import stat
import struct
import tarfile
import time
import zipfile
from collections.abc import Callable
from pathlib import Path

import pytest
from hostile_grading import grade

SUBMISSION_YAML = json.dumps(
    {
        "contract": 1,
        "candidate": "archive",
        "loadgen": {"command": ["python", "-c", "pass"], "test_command": ["python", "-c", "pass"], "percentile": "m:f"},
        "gateway": {"command": ["python", "-c", "pass"]},
        "manifests": {"values": "v.yaml"},
        "sizing": {"command": ["python", "-c", "pass"]},
        "memo": "MEMO.md",
    }
).encode()


def _tar_member(
    name: str, *, data: bytes = b"", kind: bytes = tarfile.REGTYPE, link: str = ""
) -> tuple[tarfile.TarInfo, bytes]:
    info = tarfile.TarInfo(name)
    info.type, info.linkname, info.size = kind, link, len(data) if kind == tarfile.REGTYPE else 0
    return info, data


def _tar(path: Path, members: list[tuple[tarfile.TarInfo, bytes]]) -> Path:
    with tarfile.open(path, "w:gz") as tf:
        tf.addfile(_tar_member("sub/submission.yaml", data=SUBMISSION_YAML)[0], io.BytesIO(SUBMISSION_YAML))
        for info, data in members:
            tf.addfile(info, io.BytesIO(data) if info.isreg() else None)
    return path


def _zip(path: Path, entries: dict[str, bytes], modes: dict[str, int] | None = None) -> Path:
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as zf:
        zf.writestr("sub/submission.yaml", SUBMISSION_YAML)
        for name, data in entries.items():
            info = zipfile.ZipInfo(name)
            info.compress_type = zipfile.ZIP_DEFLATED
            if modes and name in modes:
                info.external_attr = modes[name] << 16
            zf.writestr(info, data)
    return path


def _lie_about_sizes(path: Path, declared: int) -> None:
    """Every uncompressed-size field (local header, central directory) rewritten to `declared`."""
    data = bytearray(path.read_bytes())
    for signature, offset in ((b"PK\x03\x04", 22), (b"PK\x01\x02", 24)):
        at = data.find(signature)
        while at != -1:
            struct.pack_into("<I", data, at + offset, declared)
            at = data.find(signature, at + 4)
    path.write_bytes(bytes(data))


def _liar(path: Path) -> Path:
    _zip(path, {"sub/big.bin": b"\0" * (160 * 1024 * 1024)})
    _lie_about_sizes(path, 1000)
    return path


def _many(path: Path) -> Path:
    with tarfile.open(path, "w") as tf:
        tf.addfile(_tar_member("sub/submission.yaml", data=SUBMISSION_YAML)[0], io.BytesIO(SUBMISSION_YAML))
        info = tarfile.TarInfo()
        for i in range(100_000):
            info.name, info.size = f"sub/f{i}", 1
            tf.addfile(info, io.BytesIO(b"x"))
    return path


ARCHIVES: dict[str, tuple[Callable[[Path], Path], str]] = {
    "dotdot": (lambda d: _tar(d / "a.tar.gz", [_tar_member("sub/../../evil", data=b"x")]), "'..'"),
    "absolute": (lambda d: _tar(d / "a.tar.gz", [_tar_member(str(d / "abs-evil"), data=b"x")]), "absolute path"),
    "symlink-out": (
        lambda d: _tar(d / "a.tar.gz", [_tar_member("sub/up", kind=tarfile.SYMTYPE, link="../../..")]),
        "leaves the folder",
    ),
    "symlink-abs": (
        lambda d: _tar(d / "a.tar.gz", [_tar_member("sub/etc", kind=tarfile.SYMTYPE, link="/etc")]),
        "absolute",
    ),
    "hardlink-abs": (
        lambda d: _tar(d / "a.tar.gz", [_tar_member("sub/pw", kind=tarfile.LNKTYPE, link="/etc/passwd")]),
        "absolute path",
    ),
    "hardlink-up": (
        lambda d: _tar(d / "a.tar.gz", [_tar_member("sub/h", kind=tarfile.LNKTYPE, link="../outside")]),
        "'..'",
    ),
    "zip-symlink": (
        lambda d: _zip(d / "a.zip", {"sub/ln": b"../../../etc/shadow"}, {"sub/ln": stat.S_IFLNK | 0o777}),
        "leaves the folder",
    ),
    "zip-bomb": (lambda d: _zip(d / "a.zip", {"sub/big.bin": b"\0" * (160 * 1024 * 1024)}), "bytes uncompressed"),
    "zip-bomb-liar": (lambda d: _liar(d / "a.zip"), "'sub/big.bin'"),
    "many-files": (lambda d: _many(d / "a.tar"), "more than"),
}


@pytest.mark.parametrize("name", list(ARCHIVES))
def test_a_hostile_archive_is_refused_by_name_in_a_report(name: str, tmp_path: Path) -> None:
    build, reason = ARCHIVES[name]
    made = tmp_path / "made"
    made.mkdir()
    archive = build(made)
    tmpdir = tmp_path / "grader-tmp"
    tmpdir.mkdir()
    started = time.monotonic()
    graded = grade(archive, tmp_path / "out", only=("loadgen.runs", "gateway.starts"), tmpdir=tmpdir)
    took = time.monotonic() - started
    assert graded.exit_code == 0, graded.stderr[-2000:]
    assert graded.report is not None
    kit = graded.report["extra_data"]["kit"]
    assert any(reason in problem for problem in kit["contract_problems"]), kit["contract_problems"]
    assert {c["status"] for c in kit["criteria"]} == {"skipped"}
    assert all(reason in c["output"] for c in kit["criteria"])
    assert list(tmpdir.iterdir()) == [], "the unpack folder was left behind"
    assert sorted(p.name for p in made.iterdir()) == [archive.name], "something was written beside the archive"
    assert not (tmp_path / "evil").exists() and not (tmp_path / "outside").exists()
    assert took < 60, f"refusing took {took:.0f} s"
