"""Unpack a submission archive without trusting it.

A submission arrives as .zip, .tar.gz, .tgz or .tar. Every entry is checked before anything is
written (names, types, link targets, declared sizes, count), then written by hand — never by
`extractall` — counting the bytes actually produced, so an archive that lies about its sizes
stops at the limit too. A refusal names the entry and the reason and removes what was written.
"""

from __future__ import annotations

import os
import shutil
import stat
import tarfile
import zipfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import IO

__all__ = ["MAX_BYTES", "MAX_FILES", "ArchiveError", "unpack"]

MAX_BYTES = 100 * 1024 * 1024  # code, a memo and some results: far below this
MAX_FILES = 10_000
_CHUNK = 1024 * 1024


class ArchiveError(ValueError):
    """The archive is refused; the message names the archive, the entry and why."""


@dataclass
class _Entry:
    name: str  # as in the archive
    parts: tuple[str, ...]  # the checked relative path
    kind: str  # "dir", "file", "symlink", "hardlink"
    size: int
    mode: int
    link: str = ""  # symlink target, or the archive path a hardlink points to
    source: object = None  # the ZipInfo or TarInfo


def _kind_of(archive: str) -> str:
    name = archive.lower()
    if name.endswith(".zip"):
        return "zip"
    if name.endswith((".tar.gz", ".tgz", ".tar")):
        return "tar"
    raise ArchiveError(f"{archive}: not a .zip, .tar.gz, .tgz or .tar archive")


def _safe_parts(archive: Path, name: str) -> tuple[str, ...]:
    if "\x00" in name:
        raise ArchiveError(f"{archive}: entry {name!r}: its name holds a NUL byte")
    unified = name.replace("\\", "/")
    if unified.startswith("/") or (len(unified) > 1 and unified[1] == ":"):
        raise ArchiveError(f"{archive}: entry {name!r}: absolute path")
    parts = tuple(p for p in PurePosixPath(unified).parts if p not in ("", "."))
    if ".." in parts:
        raise ArchiveError(f"{archive}: entry {name!r}: '..' in its path leaves the folder")
    return parts


def _zip_entries(archive: Path, zf: zipfile.ZipFile) -> Iterator[_Entry]:
    for info in zf.infolist():
        mode = info.external_attr >> 16 if info.create_system == 3 else 0  # Unix mode bits, when made on Unix
        parts = _safe_parts(archive, info.filename)
        if info.is_dir() or stat.S_ISDIR(mode):
            yield _Entry(info.filename, parts, "dir", 0, mode, source=info)
        elif stat.S_ISLNK(mode):
            if info.file_size > 4096:
                raise ArchiveError(f"{archive}: entry {info.filename!r}: symlink target too long")
            target = zf.read(info).decode("utf-8", "replace")
            yield _Entry(info.filename, parts, "symlink", 0, mode, link=target, source=info)
        elif stat.S_IFMT(mode) not in (0, stat.S_IFREG):
            raise ArchiveError(f"{archive}: entry {info.filename!r}: special file (device, FIFO or socket)")
        else:
            yield _Entry(info.filename, parts, "file", info.file_size, mode, source=info)


def _tar_entries(archive: Path, tf: tarfile.TarFile) -> Iterator[_Entry]:
    for member in tf:
        parts = _safe_parts(archive, member.name)
        if member.isdir():
            yield _Entry(member.name, parts, "dir", 0, member.mode, source=member)
        elif member.issym():
            yield _Entry(member.name, parts, "symlink", 0, member.mode, link=member.linkname, source=member)
        elif member.islnk():
            yield _Entry(member.name, parts, "hardlink", 0, member.mode, link=member.linkname, source=member)
        elif member.isreg():
            yield _Entry(member.name, parts, "file", member.size, member.mode, source=member)
        else:
            raise ArchiveError(f"{archive}: entry {member.name!r}: special file (device, FIFO or socket)")


def _check_links(archive: Path, entry: _Entry, files: set[tuple[str, ...]]) -> None:
    if entry.kind == "symlink":
        if entry.link.startswith("/") or not entry.link:
            raise ArchiveError(f"{archive}: entry {entry.name!r}: symlink to an absolute path {entry.link!r}")
        depth = len(entry.parts) - 1
        for part in PurePosixPath(entry.link.replace("\\", "/")).parts:
            depth += -1 if part == ".." else 0 if part == "." else 1
            if depth < 0:
                raise ArchiveError(f"{archive}: entry {entry.name!r}: symlink target {entry.link!r} leaves the folder")
    elif entry.kind == "hardlink":
        try:
            target = _safe_parts(archive, entry.link)
        except ArchiveError as exc:
            why = str(exc).rsplit(": ", 1)[-1]
            raise ArchiveError(f"{archive}: entry {entry.name!r}: hardlink to {entry.link!r}: {why}") from None
        if target not in files:
            raise ArchiveError(
                f"{archive}: entry {entry.name!r}: hardlink to {entry.link!r}, which is not a file before it"
            )


def _survey(archive: Path, entries: Iterator[_Entry], max_bytes: int, max_files: int) -> list[_Entry]:
    """Check every entry's header before anything is written; stop at the first refusal."""
    out: list[_Entry] = []
    files: set[tuple[str, ...]] = set()
    declared = 0
    for count, entry in enumerate(entries, start=1):
        if count > max_files:  # folders count too: a million empty folders is a bomb as well
            raise ArchiveError(f"{archive}: entry {entry.name!r}: more than {max_files} files and folders")
        if not entry.parts:
            if entry.kind == "dir":
                continue
            raise ArchiveError(f"{archive}: entry {entry.name!r}: empty name")
        _check_links(archive, entry, files)
        declared += entry.size
        if declared > max_bytes:
            raise ArchiveError(f"{archive}: entry {entry.name!r}: more than {max_bytes} bytes uncompressed")
        if entry.kind == "file":
            files.add(entry.parts)
        out.append(entry)
    return out


class _Budget:
    def __init__(self, archive: Path, max_bytes: int) -> None:
        self.archive, self.left, self.max = archive, max_bytes, max_bytes

    def copy(self, name: str, src: IO[bytes], dst: IO[bytes]) -> None:
        while chunk := src.read(_CHUNK):
            self.left -= len(chunk)
            if self.left < 0:
                raise ArchiveError(
                    f"{self.archive}: entry {name!r}: more than {self.max} bytes uncompressed "
                    "(its declared size was smaller)"
                )
            dst.write(chunk)


def _inside(root: str, path: str) -> bool:
    return path == root or path.startswith(root + os.sep)


def _write(archive: Path, dest: Path, entry: _Entry, opener: object, budget: _Budget) -> None:
    root = os.path.realpath(dest)
    target = dest.joinpath(*entry.parts)
    parent = target.parent
    parent.mkdir(parents=True, exist_ok=True)
    if not _inside(root, os.path.realpath(parent)):
        raise ArchiveError(f"{archive}: entry {entry.name!r}: written through a link that leaves the folder")
    if entry.kind == "dir":
        target.mkdir(exist_ok=True)
        return
    if os.path.lexists(target):
        raise ArchiveError(f"{archive}: entry {entry.name!r}: appears twice")
    if entry.kind == "symlink":
        if not _inside(root, os.path.realpath(os.path.join(os.path.realpath(parent), entry.link))):
            raise ArchiveError(f"{archive}: entry {entry.name!r}: symlink target {entry.link!r} leaves the folder")
        os.symlink(entry.link, target)
        return
    if entry.kind == "hardlink":
        source = dest.joinpath(*_safe_parts(archive, entry.link))
        if source.is_symlink() or not source.is_file() or not _inside(root, os.path.realpath(source)):
            raise ArchiveError(
                f"{archive}: entry {entry.name!r}: hardlink to {entry.link!r}, which is not a file inside"
            )
        shutil.copyfile(source, target)  # a copy, not a link: the two stay independent
        return
    fd = os.open(target, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
    with os.fdopen(fd, "wb") as dst, opener(entry) as src:  # type: ignore[operator]
        budget.copy(entry.name, src, dst)
    os.chmod(target, 0o755 if entry.mode & 0o111 else 0o644)


def unpack(archive: str | Path, dest: str | Path, *, max_bytes: int = MAX_BYTES, max_files: int = MAX_FILES) -> Path:
    """Unpack `archive` into `dest` (new or empty); return the submission's folder.

    That is the single top folder when the archive holds only one and it has submission.yaml,
    otherwise `dest`. Raises ArchiveError naming the entry for anything refused, and then leaves
    `dest` as it was.
    """
    archive, dest = Path(archive), Path(dest)
    kind = _kind_of(archive.name)
    if not archive.is_file():
        raise ArchiveError(f"{archive}: no such file")
    if dest.exists() and (not dest.is_dir() or any(dest.iterdir())):
        raise ArchiveError(f"{dest}: the destination must be a new or empty folder")
    created = not dest.exists()
    dest.mkdir(parents=True, exist_ok=True)
    budget = _Budget(archive, max_bytes)
    try:
        if kind == "zip":
            with zipfile.ZipFile(archive) as zf:
                entries = _survey(archive, _zip_entries(archive, zf), max_bytes, max_files)
                for entry in entries:
                    _write(archive, dest, entry, lambda e: zf.open(e.source), budget)
        else:
            with tarfile.open(archive, "r:*") as tf:
                entries = _survey(archive, _tar_entries(archive, tf), max_bytes, max_files)
                for entry in entries:
                    _write(archive, dest, entry, lambda e: tf.extractfile(e.source), budget)
    except (zipfile.BadZipFile, tarfile.TarError, EOFError, OSError, ValueError, RuntimeError) as exc:
        _clear(dest, remove=created)
        if isinstance(exc, ArchiveError):
            raise
        raise ArchiveError(f"{archive}: not a readable archive ({exc})") from None
    tops = list(dest.iterdir())
    if len(tops) == 1 and tops[0].is_dir() and not tops[0].is_symlink() and (tops[0] / "submission.yaml").is_file():
        return tops[0]
    return dest


def _clear(dest: Path, *, remove: bool) -> None:
    if remove:
        shutil.rmtree(dest, ignore_errors=True)
        return
    for child in dest.iterdir():
        if child.is_dir() and not child.is_symlink():
            shutil.rmtree(child, ignore_errors=True)
        else:
            child.unlink(missing_ok=True)
