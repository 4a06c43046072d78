"""Unpacking submission archives: real hostile archives built with zipfile and tarfile."""

from __future__ import annotations

import io
import os
import stat
import struct
import tarfile
import time
import zipfile
from pathlib import Path

import pytest

from grader.grading.archive import ArchiveError, unpack

SUBMISSION = {
    "sub/submission.yaml": b"version: 1\n",
    "sub/loadgen/main.py": b"print('hi')\n",
    "sub/memo.md": b"# memo\n",
}


def make_zip(path: Path, files: dict[str, bytes], *, modes: dict[str, int] | None = None) -> Path:
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as zf:
        for name, data in files.items():
            info = zipfile.ZipInfo(name)
            info.compress_type = zipfile.ZIP_DEFLATED
            mode = (modes or {}).get(name)
            if mode is not None:
                info.external_attr = mode << 16
            zf.writestr(info, data)
    return path


def tar_info(
    name: str, *, kind: bytes = tarfile.REGTYPE, size: int = 0, link: str = "", mode: int = 0o644
) -> tarfile.TarInfo:
    info = tarfile.TarInfo(name)
    info.type, info.size, info.linkname, info.mode = kind, size, link, mode
    return info


def make_tar(path: Path, members: list[tuple[tarfile.TarInfo, bytes]]) -> Path:
    with tarfile.open(path, "w:gz" if path.name.endswith(("gz", "tgz")) else "w") as tf:
        for info, data in members:
            tf.addfile(info, io.BytesIO(data) if info.isreg() else None)
    return path


@pytest.mark.parametrize("name", ["s.zip", "s.tar.gz", "s.tgz", "s.tar"])
def test_a_good_archive_unpacks_to_its_submission_folder(tmp_path: Path, name: str) -> None:
    if name.endswith(".zip"):
        archive = make_zip(tmp_path / name, SUBMISSION, modes={"sub/loadgen/main.py": stat.S_IFREG | 0o755})
    else:
        archive = make_tar(
            tmp_path / name,
            [(tar_info(n, size=len(d), mode=0o755 if n.endswith(".py") else 0o644), d) for n, d in SUBMISSION.items()],
        )
    folder = unpack(archive, tmp_path / "out")
    assert folder == tmp_path / "out" / "sub"
    assert (folder / "loadgen" / "main.py").read_bytes() == b"print('hi')\n"
    assert os.access(folder / "loadgen" / "main.py", os.X_OK) and not os.access(folder / "memo.md", os.X_OK)


def test_without_a_single_top_folder_the_destination_is_the_submission(tmp_path: Path) -> None:
    archive = make_zip(tmp_path / "flat.zip", {"submission.yaml": b"v\n", "a.py": b""})
    assert unpack(archive, tmp_path / "out") == tmp_path / "out"


@pytest.mark.parametrize(
    ("members", "why"),
    [
        ([(tar_info("/etc/evil", size=1), b"x")], "absolute path"),
        ([(tar_info("sub/../../evil", size=1), b"x")], "'..'"),
        ([(tar_info("dev", kind=tarfile.CHRTYPE), b"")], "special file"),
        ([(tar_info("fifo", kind=tarfile.FIFOTYPE), b"")], "special file"),
        ([(tar_info("up", kind=tarfile.SYMTYPE, link="../../etc/passwd"), b"")], "leaves the folder"),
        ([(tar_info("abs", kind=tarfile.SYMTYPE, link="/etc/passwd"), b"")], "absolute"),
        ([(tar_info("hard", kind=tarfile.LNKTYPE, link="/etc/passwd"), b"")], "absolute path"),
        ([(tar_info("hard", kind=tarfile.LNKTYPE, link="../outside"), b"")], "'..'"),
        ([(tar_info("d/l", kind=tarfile.SYMTYPE, link="../.."), b"")], "leaves the folder"),
    ],
)
def test_hostile_tar_entries_are_refused_by_name(
    tmp_path: Path, members: list[tuple[tarfile.TarInfo, bytes]], why: str
) -> None:
    archive = make_tar(tmp_path / "evil.tar", members)
    with pytest.raises(ArchiveError, match=why) as caught:
        unpack(archive, tmp_path / "out")
    assert repr(members[0][0].name) in str(caught.value)
    assert not (tmp_path / "out").exists() and not (tmp_path / "evil").exists()


def test_a_symlinked_folder_cannot_carry_a_write_outside(tmp_path: Path) -> None:
    # "inside" -> "." is fine; "inside/x" then lands in the folder itself, never outside.
    archive = make_tar(
        tmp_path / "links.tar",
        [(tar_info("inside", kind=tarfile.SYMTYPE, link="."), b""), (tar_info("inside/x", size=2), b"ok")],
    )
    out = unpack(archive, tmp_path / "out")
    assert (out / "x").read_bytes() == b"ok" and (out / "inside").is_symlink()


@pytest.mark.parametrize(
    ("name", "mode", "why"),
    [
        ("/abs.txt", None, "absolute path"),
        ("a/../../x", None, "'..'"),
        ("C:\\win.txt", None, "absolute path"),
        ("fifo", stat.S_IFIFO | 0o644, "special file"),
    ],
)
def test_hostile_zip_entries_are_refused_by_name(tmp_path: Path, name: str, mode: int | None, why: str) -> None:
    archive = make_zip(tmp_path / "evil.zip", {name: b"x"}, modes={name: mode} if mode else None)
    with pytest.raises(ArchiveError, match=why):
        unpack(archive, tmp_path / "out")


def test_zip_symlink_leaving_the_folder_is_refused(tmp_path: Path) -> None:
    archive = make_zip(
        tmp_path / "ln.zip", {"ok.txt": b"x", "link": b"../../etc/shadow"}, modes={"link": stat.S_IFLNK | 0o777}
    )
    with pytest.raises(ArchiveError, match="'link'.*leaves the folder"):
        unpack(archive, tmp_path / "out")


def test_zip_bomb_is_refused_by_its_declared_size(tmp_path: Path) -> None:
    archive = make_zip(tmp_path / "bomb.zip", {"big.bin": b"\0" * (64 * 1024 * 1024)})
    assert archive.stat().st_size < 1024 * 1024  # highly compressible
    start = time.monotonic()
    with pytest.raises(ArchiveError, match="'big.bin'.*bytes uncompressed"):
        unpack(archive, tmp_path / "out", max_bytes=8 * 1024 * 1024)
    assert time.monotonic() - start < 5 and not (tmp_path / "out").exists()


def _lie_about_sizes(path: Path, declared: int) -> None:
    """Rewrite every uncompressed-size field (local header and central directory) to `declared`."""
    data = bytearray(path.read_bytes())
    for signature, offset in ((b"PK\x03\x04", 22), (b"PK\x01\x02", 24)):
        at = data.find(signature)
        while at != -1:
            struct.pack_into("<I", data, at + offset, declared)
            at = data.find(signature, at + 4)
    path.write_bytes(bytes(data))


def test_zip_bomb_that_lies_about_its_size_stops_at_the_limit(tmp_path: Path) -> None:
    archive = make_zip(tmp_path / "liar.zip", {"big.bin": b"\0" * (64 * 1024 * 1024)})
    _lie_about_sizes(archive, 1000)
    with pytest.raises(ArchiveError, match="'big.bin'"):  # zipfile stops at the declared size; the CRC then fails
        unpack(archive, tmp_path / "out", max_bytes=8 * 1024 * 1024)
    assert not (tmp_path / "out").exists()


def test_declared_sizes_are_summed_over_entries(tmp_path: Path) -> None:
    # Two files of 6 MiB each under an 8 MiB limit: each is allowed alone, not both.
    archive = make_tar(
        tmp_path / "two.tgz", [(tar_info(f"f{i}", size=6 * 1024 * 1024), b"\0" * (6 * 1024 * 1024)) for i in range(2)]
    )
    with pytest.raises(ArchiveError, match="'f1'.*bytes uncompressed"):
        unpack(archive, tmp_path / "out", max_bytes=8 * 1024 * 1024)


@pytest.mark.slow
def test_a_hundred_thousand_tiny_files_are_refused_quickly(tmp_path: Path) -> None:
    path = tmp_path / "many.tar"
    with tarfile.open(path, "w") as tf:
        for i in range(100_000):
            tf.addfile(tar_info(f"f{i}", size=1), io.BytesIO(b"x"))
    start = time.monotonic()
    with pytest.raises(ArchiveError, match="more than 1000 files"):
        unpack(path, tmp_path / "out", max_files=1000)
    assert time.monotonic() - start < 2
    assert not (tmp_path / "out").exists()


def test_bad_inputs_are_one_line_errors(tmp_path: Path) -> None:
    with pytest.raises(ArchiveError, match="not a .zip"):
        unpack(tmp_path / "x.rar", tmp_path / "out")
    with pytest.raises(ArchiveError, match="no such file"):
        unpack(tmp_path / "missing.zip", tmp_path / "out")
    (tmp_path / "junk.zip").write_bytes(b"not a zip at all")
    with pytest.raises(ArchiveError, match="not a readable archive"):
        unpack(tmp_path / "junk.zip", tmp_path / "out")
    (tmp_path / "full").mkdir()
    (tmp_path / "full" / "f").write_text("x")
    with pytest.raises(ArchiveError, match="new or empty"):
        unpack(make_zip(tmp_path / "ok.zip", {"a": b""}), tmp_path / "full")
