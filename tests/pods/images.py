"""The grader's image, built here with podman from a base made from Debian's packages.

    why = unusable()                      # why podman cannot run the pods here ("" when it can)
    ensure_base(BASE)                     # debootstrap + podman import, once per machine
    build_image(IMAGE, base=BASE)         # `make image`, the hiring team's command
    files = image_files(IMAGE)            # every path in the image, from `podman export`

No image registry is reached: the base is Debian's bookworm (minbase, python3, python3-venv,
bubblewrap, ca-certificates) put together by debootstrap from Debian's packages and imported, and
`make image` installs the kit from wheels gathered on this machine (build/wheels/).

Two settings of this machine are given to every podman command, neither of them a pod's: the
`runc` runtime (Debian's `crun` refuses this machine's mix of cgroup v1 and v2), and rlimits runc
can set: podman's defaults for root ask for more open files than this host's hard limit, and for
more processes than the 32768 podman lowers its own limit to, and runc cannot raise a hard limit
(it stops with "error setting rlimit"). Open files get this process's hard limit; processes at
most 32768.
"""

from __future__ import annotations

import os
import resource
import shutil
import subprocess
import tarfile
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
BASE = "localhost/grader-base:bookworm"
IMAGE = "localhost/serving-takehome-grader:test"
BASE_PACKAGES = ["python3", "python3-venv", "bubblewrap", "ca-certificates"]


def host_flags() -> list[str]:
    """The runtime and the rlimits this host needs (the module's docstring says why); not a pod's settings."""
    flags = ["--runtime", "runc"]
    for name, which, most in (("nofile", resource.RLIMIT_NOFILE, 1 << 20), ("nproc", resource.RLIMIT_NPROC, 32768)):
        hard = resource.getrlimit(which)[1]
        hard = most if hard == resource.RLIM_INFINITY else min(hard, most)
        flags += ["--ulimit", f"{name}={hard}:{hard}"]
    return flags


def _run(argv: list[str], timeout: float, **kwargs: object) -> subprocess.CompletedProcess[str]:
    return subprocess.run(argv, capture_output=True, text=True, timeout=timeout, check=False, **kwargs)  # type: ignore[call-overload, no-any-return]


def _last_line(done: subprocess.CompletedProcess[str]) -> str:
    return ((done.stderr or done.stdout).strip().splitlines() or ["no message"])[-1]


def unusable() -> str:
    """Why the pods cannot be run here (empty when they can): not root, no podman, no runc, no debootstrap."""
    if os.geteuid() != 0:
        return "podman runs the pods as root here (rootless podman needs /etc/subuid for 65,536 uids)"
    for tool, package in (("podman", "podman"), ("runc", "runc"), ("debootstrap", "debootstrap")):
        if shutil.which(tool) is None:
            return f"no {tool} (apt-get install {package}; make test-image installs it)"
    try:
        done = _run(["podman", "info", "--format", "{{.Host.OCIRuntime.Name}}"], timeout=60)
    except subprocess.TimeoutExpired:
        return "podman info did not answer in 60 s"
    if done.returncode != 0:
        return f"podman cannot run here: {_last_line(done)}"
    return ""


def exists(tag: str) -> bool:
    return _run(["podman", "image", "exists", tag], timeout=60).returncode == 0


def ensure_base(tag: str = BASE) -> None:
    """The base image, made once: debootstrap's bookworm minbase with Python and bubblewrap, imported."""
    if exists(tag):
        return
    with tempfile.TemporaryDirectory(prefix="grader-base-") as folder:
        rootfs = Path(folder) / "rootfs"
        done = _run(
            ["debootstrap", "--variant=minbase", "--include=" + ",".join(BASE_PACKAGES), "bookworm", str(rootfs)],
            timeout=900,
        )
        assert done.returncode == 0, f"debootstrap failed: {done.stdout[-2000:]}{done.stderr[-2000:]}"
        for cache in ("var/cache/apt/archives", "var/lib/apt/lists"):  # what apt fetched: not part of the base
            for item in (rootfs / cache).glob("*"):
                if item.is_file():
                    item.unlink()
        with subprocess.Popen(["tar", "-C", str(rootfs), "-c", "."], stdout=subprocess.PIPE) as tar:
            done = _run(["podman", "import", "--change", 'CMD ["/bin/bash"]', "-", tag], timeout=600, stdin=tar.stdout)
        assert done.returncode == 0, f"podman import failed: {_last_line(done)}"


def build_image(tag: str = IMAGE, *, base: str = BASE) -> float:
    """`make image` with this base, as a hiring team runs it; returns its seconds."""
    import time

    started = time.monotonic()
    flags = " ".join(host_flags())
    done = _run(
        [
            "make",
            "--no-print-directory",
            "image",
            "ENGINE=podman",
            f"BASE={base}",
            f"IMAGE={tag}",
            f"BUILD_FLAGS={flags}",
        ],
        timeout=1200,
        cwd=ROOT,
    )
    assert done.returncode == 0, f"make image failed: {done.stdout[-3000:]}{done.stderr[-3000:]}"
    return time.monotonic() - started


def image_size(tag: str = IMAGE) -> int:
    """Bytes, as `podman image inspect` counts them (every layer, uncompressed)."""
    done = _run(["podman", "image", "inspect", "--format", "{{.Size}}", tag], timeout=60)
    assert done.returncode == 0, _last_line(done)
    return int(done.stdout.strip())


def image_files(tag: str = IMAGE) -> list[str]:
    """Every path in the image's filesystem (no leading slash), read from a container made and removed here."""
    done = _run(["podman", "create", *host_flags(), tag], timeout=120)
    assert done.returncode == 0, _last_line(done)
    container = done.stdout.strip().splitlines()[-1]
    try:
        with subprocess.Popen(["podman", "export", container], stdout=subprocess.PIPE) as export:
            assert export.stdout is not None
            with tarfile.open(fileobj=export.stdout, mode="r|") as archive:
                names = [member.name.removeprefix("./").rstrip("/") for member in archive]
        return names
    finally:
        _run(["podman", "rm", "--force", container], timeout=120)
