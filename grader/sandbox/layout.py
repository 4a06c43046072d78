"""What the sandbox shows: an allowlist of the host's folders, and the bubblewrap command that builds it.

Everything is found from the imported modules and the running interpreter, never from fixed
paths, so an editable checkout and an installed wheel both work. The candidate sees the system
folders, the Python installation that runs the kit (base and venv), and the kit parts it may use
(`fake_server`, `chart/`, `schemas/`), each at its real path so the venv's editable-install finder
still resolves `fake_server`. The `grader` package is bound only under a 0700 root-owned folder for
the harness; if it sits inside a bound folder (a wheel in the venv's site-packages) an empty tmpfs
hides it there, and the chart and schemas it carries (`grader/_kit/`) are bound again on top. The
stub API client is not bound: the harness writes a copy of it for commands to import.
"""

from __future__ import annotations

import compileall
import functools
import os
import sys
from dataclasses import dataclass
from pathlib import Path

import fake_server
import grader
from grader.shared.kit_files import kit_dir

__all__ = [
    "BOX_ROOT",
    "CGROUP_MOUNTS",
    "HIDDEN",
    "KIT_COPY",
    "SUBMISSION_SOURCE",
    "KitPaths",
    "bwrap_argv",
    "compile_kit",
    "in_the_way",
    "kit_paths",
]

SYSTEM_FOLDERS = ("/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32", "/etc")
BOX_ROOT = "/tmp"  # the size-limited tmpfs: work/, home/, tmp/, inject/ live here
HIDDEN = "/tmp/.h"  # 0700 root: what only the harness may read
#: The folders the harness makes in BOX_ROOT for the candidate's commands (harness.py, jobs.py).
MADE_IN_BOX = ("work", "home", "tmp", "inject", "stub-client")
KIT_COPY = HIDDEN + "/kit"  # PYTHONPATH of the harness; holds `grader`
SUBMISSION_SOURCE = HIDDEN + "/submission"
CGROUP_MOUNTS = HIDDEN + "/cg"


@dataclass(frozen=True)
class KitPaths:
    fake_server: Path
    grader: Path
    python_prefixes: tuple[Path, ...]  # sys.base_prefix, sys.prefix, and where the interpreter really is
    python_bin: Path  # the folder of the interpreter running the kit (the venv's bin/)
    extras: tuple[Path, ...]  # chart/ and schemas/, wherever the kit keeps them

    def candidate_binds(self) -> list[Path]:
        """Folders bound read-only at their real path, outermost first, without repeats."""
        out: list[Path] = []
        for path in [*self.python_prefixes, self.fake_server, *self.extras]:
            if not any(path == p or path.is_relative_to(p) for p in out if not _is_system(p)) and not _is_system(path):
                out.append(path)
        return out


def _is_system(path: Path) -> bool:
    return any(path == Path(s) or path.is_relative_to(s) for s in SYSTEM_FOLDERS)


def kit_paths() -> KitPaths:
    fs = Path(fake_server.__file__).resolve().parent
    gr = Path(grader.__file__).resolve().parent
    real_python = Path(os.path.realpath(sys.executable))
    prefixes = [Path(sys.base_prefix).resolve(), Path(sys.prefix).resolve(), real_python.parent.parent]
    unique = tuple(dict.fromkeys(p for p in prefixes if p != Path("/")))
    # chart/ and schemas/ live in a checkout beside the packages, in a wheel inside grader/_kit/:
    # ask kit_files, as every reader of them does, so both installs show candidates the same data.
    found = [kit_dir("chart"), kit_dir("schemas")]
    extras = tuple(dict.fromkeys(p.resolve() for p in found if p.is_dir()))
    return KitPaths(
        fake_server=fs,
        grader=gr,
        python_prefixes=unique,
        python_bin=Path(sys.executable).parent.absolute(),
        extras=extras,
    )


def in_the_way(kit: KitPaths) -> list[Path]:
    """Kit folders bound where the sandbox makes folders of its own (a venv in /tmp/work/...): the harness
    could not make its work folder there, so the sandbox refuses to open rather than fail inside."""
    made = [Path(BOX_ROOT, name) for name in (*MADE_IN_BOX, Path(HIDDEN).name)]
    return [path for path in (*kit.candidate_binds(), kit.grader) if any(path.is_relative_to(m) for m in made)]


@functools.cache
def compile_kit(kit: KitPaths) -> None:
    """Write the kit's bytecode where it is missing or stale, once per process. Every sandbox's harness
    imports `grader` and `fake_server` from read-only binds and cannot write it, so without this an
    editable checkout run with PYTHONDONTWRITEBYTECODE compiles some 150 modules at each start. A folder
    that cannot be written (an installed wheel, whose bytecode pip wrote) is left as it is."""
    for package in (kit.fake_server, kit.grader):
        if os.access(package, os.W_OK):
            compileall.compile_dir(package, quiet=2)


def _system_binds() -> list[str]:
    args: list[str] = []
    for folder in SYSTEM_FOLDERS:
        if os.path.islink(folder):
            args += ["--symlink", os.readlink(folder), folder]
        elif os.path.isdir(folder):
            args += ["--ro-bind", folder, folder]
    return args


def _ancestors(paths: list[Path]) -> list[str]:
    """Every folder above the given paths, outermost first, except / and /tmp."""
    out: dict[str, None] = {}
    for path in paths:
        for parent in reversed(path.parents):
            if str(parent) not in ("/", BOX_ROOT):
                out[str(parent)] = None
    return list(out)


def bwrap_argv(
    bwrap: str, kit: KitPaths, submission: Path, *, disk_bytes: int, cgroups: dict[str, Path], python: str
) -> list[str]:
    """The full bubblewrap command line. It holds paths only, never a secret (any process may read it)."""
    args = [
        bwrap,
        "--unshare-net",
        "--unshare-pid",
        "--unshare-ipc",
        "--unshare-uts",
        "--hostname",
        "sandbox",
        "--die-with-parent",
        "--new-session",
        *_system_binds(),
        "--proc",
        "/proc",
        "--dev",
        "/dev",
        "--size",
        str(disk_bytes),
        "--perms",
        "1777",
        "--tmpfs",
        BOX_ROOT,
        "--perms",
        "0700",
        "--dir",
        HIDDEN,
    ]
    binds = kit.candidate_binds()
    for folder in _ancestors(binds):  # bubblewrap would make them 0700, hiding what they hold
        args += ["--perms", "0755", "--dir", folder]
    for path in binds:
        args += ["--ro-bind", str(path), str(path)]
    args += ["--ro-bind", str(kit.grader), f"{KIT_COPY}/grader", "--ro-bind", str(submission), SUBMISSION_SOURCE]
    for controller, cgroup in cgroups.items():
        args += ["--bind", str(cgroup), f"{CGROUP_MOUNTS}/{controller}"]
    if any(kit.grader.is_relative_to(path) for path in binds):
        args += ["--tmpfs", str(kit.grader)]
        for path in kit.extras:  # the kit's data inside the package just hidden: shown again, read-only
            if path.is_relative_to(kit.grader):
                args += ["--ro-bind", str(path), str(path)]
    args += ["--chdir", KIT_COPY, "--", python, "-m", "grader.sandbox.harness"]
    return args
