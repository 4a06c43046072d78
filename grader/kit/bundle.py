"""`grader bundle`: the archive a candidate receives, installable with no network.

The archive unpacks to one folder:

    takehome/
      install.sh, install.ps1   offline install into takehome/.venv (pip --no-index --find-links)
      README.md                 how to install, and where to start
      wheels/                   the kit's wheel and every dependency, for each Python and platform
      starter/                  the candidate's working folder (TASK.md first)
      chart/, schemas/, docs/   the vendored chart, the offline schemas, the kit's design

The kit's wheel in it is a candidate build: it is built from a copy of the sources without the
grader's unseen material (`grader/unseen/`) and with a rubric of public criteria only, so nothing
a candidate installs names a hidden criterion. The reference submission and the chaff live outside
the packages and are never copied.
"""

from __future__ import annotations

import hashlib
import json
import shutil
import subprocess
import sys
import tarfile
import tempfile
import tomllib
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from grader.kit.edition_texts import edition_texts
from grader.rubric.editions import EditionError, check_name
from grader.shared.contracts import DEFAULT_EDITION, LATEST, kit_version

__all__ = [
    "ALL_PLATFORMS",
    "DEFAULT_PLATFORMS",
    "DEFAULT_PYTHONS",
    "PLATFORMS",
    "BundleError",
    "BundleResult",
    "build",
    "build_bundle",
    "build_bundles",
    "candidate_rubric",
    "kit_root",
    "this_platform",
]


def _manylinux(arch: str) -> tuple[str, ...]:
    """glibc 2.28 (RHEL 8, Debian 10, Ubuntu 20.04) and every older manylinux tag: pip does not widen
    an explicit --platform, so each tag a wheel may carry is listed."""
    return (*(f"manylinux_2_{minor}_{arch}" for minor in range(28, 16, -1)), f"manylinux2014_{arch}")


def _macos(newest: int, arch: str) -> tuple[str, ...]:
    """macOS `newest`.0 and older, native and universal2 wheels."""
    versions = [f"{major}_0" for major in range(newest, 10, -1)] + [f"10_{minor}" for minor in range(15, 8, -1)]
    return tuple(
        f"macosx_{v}_{a}"
        for v in versions
        for a in (arch, "universal2")
        if not (arch == "arm64" and a == arch and v.startswith("10_"))
    )


#: Bundle platform name -> pip `--platform` tags.
PLATFORMS: dict[str, tuple[str, ...]] = {
    "linux-x86_64": _manylinux("x86_64"),
    "linux-aarch64": _manylinux("aarch64"),
    "macos-arm64": _macos(14, "arm64"),
    "macos-x86_64": _macos(15, "x86_64"),  # the Helm SDK publishes Intel macOS wheels for macOS 15 only
    "windows-amd64": ("win_amd64",),
}
DEFAULT_PYTHONS = ("3.11", "3.12", "3.13")
#: Every platform the Helm SDK (the one native dependency without a pure fallback) publishes wheels for.
ALL_PLATFORMS = tuple(PLATFORMS)


def this_platform() -> str:
    """The bundle platform of the machine building it: the default, since candidates' laptops vary and a
    hiring team names theirs (`--platform`), each in an archive of its own."""
    import platform

    system, machine = platform.system(), platform.machine().lower()
    arch = {"amd64": "x86_64", "arm64": "aarch64"}.get(machine, machine)
    if system == "Darwin":
        return "macos-arm64" if arch == "aarch64" else "macos-x86_64"
    if system == "Windows":
        return "windows-amd64"
    return f"linux-{arch}" if f"linux-{arch}" in PLATFORMS else "linux-x86_64"


DEFAULT_PLATFORMS = (this_platform(),)
TOP = "takehome"
_UNSEEN_DIRS = ("unseen",)  # grader/unseen/: the variants and input sets the candidate must not see
_GRADER_ONLY = ("chaff.py", "selftest.py")  # build and grade the chaff; the candidate's kit has none
_IGNORE = shutil.ignore_patterns(
    "__pycache__",
    "*.pyc",
    ".pytest_cache",
    ".mypy_cache",
    ".ruff_cache",
    "*.egg-info",
    ".venv",
    "grade-report",
    "*.jsonl",
)


class BundleError(RuntimeError):
    """The bundle could not be built; the message says which step and why."""


@dataclass
class BundleResult:
    archive: Path
    size_bytes: int
    wheels: list[str]
    coverage: list[str] = field(default_factory=list)  # "3.12 macos-arm64" lines that resolved


def kit_root() -> Path:
    """The checkout the bundle is built from (a bundle needs the sources, not an installed kit)."""
    root = Path(__file__).resolve().parents[2]
    if not (root / "pyproject.toml").is_file() or not (root / "starter").is_dir():
        raise BundleError(f"{root}: not a checkout of the kit (grader bundle runs from the repository)")
    return root


def candidate_rubric(text: str) -> str:
    """The rubric a candidate's kit carries: public criteria only, and no scenario only unseen ones use."""
    data = yaml.safe_load(text)
    public = [c for c in data["criteria"] if c.get("visibility") == "public"]
    hidden = [c for c in data["criteria"] if c.get("visibility") != "public"]

    def names(criteria: list[dict[str, Any]]) -> set[str]:
        out: set[str] = set()
        for c in criteria:
            named = c.get("scenario", ())
            out.update([named] if isinstance(named, str) else named)
        return out

    hidden_only = names(hidden) - names(public)
    data["criteria"] = public
    data["scenarios"] = {k: v for k, v in data["scenarios"].items() if k not in hidden_only}
    header = "# The candidate's copy of the grading rubric: public criteria only (`grader check` grades these).\n"
    return header + yaml.safe_dump(data, sort_keys=False, width=110, allow_unicode=True)


def edition_stamp(root: Path, edition: str = DEFAULT_EDITION) -> dict[str, Any]:
    """What a bundle says it was made from: its edition, the kit's version, the contract version of its brief and
    the digest of the rubric that grades it. `grader check` prints it; the grade follows the contract it names."""
    rubric = (root / "grader" / "rubric" / "rubric.yaml").read_bytes()
    return {
        "name": edition,
        "kit": kit_version(),
        "contract": LATEST,
        "rubric": hashlib.sha256(rubric).hexdigest()[:16],
    }


def stamp(starter: Path, edition: dict[str, Any]) -> None:
    """Write `edition` into the candidate's submission.yaml (an `edition:` block, its comments kept) and into
    TASK.md's header."""
    manifest = starter / "submission.yaml"
    text = manifest.read_text(encoding="utf-8")
    fields = ", ".join(f"{k}: {json.dumps(v)}" for k, v in edition.items())
    block = f"# Written by `grader bundle`: the bundle you were given. Leave it as it is.\nedition: {{{fields}}}\n"
    manifest.write_text(text.rstrip("\n") + "\n\n" + block, encoding="utf-8")
    brief = starter / "TASK.md"
    head, _, rest = brief.read_text(encoding="utf-8").partition("\n")
    line = (
        f"\n_Edition {edition['name']}, contract {edition['contract']}, kit {edition['kit']}, rubric "
        f"{edition['rubric']}._\n"
    )
    brief.write_text(head + "\n" + line + rest, encoding="utf-8")


def _stage_sources(root: Path, stage: Path) -> None:
    for name in ("pyproject.toml", "setup.py", "MANIFEST.in", "README.md"):
        shutil.copy2(root / name, stage / name)
    for name in ("fake_server", "schemas", "chart"):
        shutil.copytree(root / name, stage / name, ignore=_IGNORE)
    # The wheel carries the stub client (setup.py copies it into grader/_kit/starter).
    (stage / "starter").mkdir()
    shutil.copy2(root / "starter" / "api_client.py", stage / "starter" / "api_client.py")
    shutil.copytree(
        root / "grader",
        stage / "grader",
        ignore=shutil.ignore_patterns(*_UNSEEN_DIRS, *_GRADER_ONLY, "__pycache__", "*.pyc"),
    )
    rubric = stage / "grader" / "rubric" / "rubric.yaml"
    rubric.write_text(candidate_rubric(rubric.read_text(encoding="utf-8")), encoding="utf-8")


def _run(argv: list[str], step: str, echo: Callable[[str], None]) -> None:
    echo(f"{step}: {' '.join(argv[:6])}{' ...' if len(argv) > 6 else ''}")
    done = subprocess.run(argv, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        tail = (done.stderr or done.stdout).strip().splitlines()[-5:]
        raise BundleError(f"{step} failed (exit {done.returncode}): " + " | ".join(tail))


def _requirements(root: Path) -> list[str]:
    project = tomllib.loads((root / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    return [*project["dependencies"], *project["optional-dependencies"]["candidate"]]


def _download(requirements: list[str], wheels: Path, python: str, platform: str, echo: Callable[[str], None]) -> None:
    tags = [arg for tag in PLATFORMS[platform] for arg in ("--platform", tag)]
    _run(
        [
            sys.executable,
            "-m",
            "pip",
            "download",
            "--quiet",
            "--only-binary=:all:",
            "--dest",
            str(wheels),
            "--python-version",
            python,
            "--implementation",
            "cp",
            *tags,
            *requirements,
        ],
        f"wheels for Python {python} on {platform}",
        echo,
    )


def _write_installers(top: Path, kit_wheel: str) -> None:
    sh = top / "install.sh"
    sh.write_text(
        f"""#!/bin/sh
# Install the take-home kit with no network: a virtual environment in .venv/ beside this script,
# filled from wheels/ only. Run it once from anywhere; PYTHON=python3.12 ./install.sh picks a Python.
set -eu
here="$(cd "$(dirname "$0")" && pwd)"
py="${{PYTHON:-python3}}"
if ! "$py" -c 'import sys; sys.exit(sys.version_info < (3, 11))' 2>/dev/null; then
  echo "install.sh: the kit needs Python 3.11 or newer with venv; set PYTHON=/path/to/python3.11 (or newer)" >&2
  exit 2
fi
"$py" -m venv "$here/.venv"
"$here/.venv/bin/python" -m pip install --quiet --no-index --find-links "$here/wheels" \\
  "$here/wheels/{kit_wheel}[candidate]"
echo "installed. Next:"
echo "  source $here/.venv/bin/activate"
echo "  cd $here/starter    # your working folder; read TASK.md"
""",
        encoding="utf-8",
    )
    sh.chmod(0o755)
    (top / "install.ps1").write_text(
        f"""# Install the take-home kit with no network (Windows PowerShell): a virtual environment in .venv\\
# beside this script, filled from wheels\\ only. Run: powershell -ExecutionPolicy Bypass -File install.ps1
$ErrorActionPreference = "Stop"
$here = Split-Path -Parent $MyInvocation.MyCommand.Path
$py = if ($env:PYTHON) {{ $env:PYTHON }} else {{ "py" }}
$pyArgs = if ($env:PYTHON) {{ @() }} else {{ @("-3") }}
& $py @pyArgs -c "import sys; sys.exit(sys.version_info < (3, 11))"
if ($LASTEXITCODE -ne 0) {{ Write-Error "the kit needs Python 3.11 or newer; set PYTHON to its python.exe"; exit 2 }}
& $py @pyArgs -m venv "$here\\.venv"
& "$here\\.venv\\Scripts\\python.exe" -m pip install --quiet --no-index --find-links "$here\\wheels" "$here\\wheels\\{kit_wheel}[candidate]"
if ($LASTEXITCODE -ne 0) {{ exit $LASTEXITCODE }}
Write-Output "installed. Next: $here\\.venv\\Scripts\\Activate.ps1, then cd $here\\starter and read TASK.md"
""",
        encoding="utf-8",
    )


def _readme(pythons: Iterable[str], platforms: Iterable[str]) -> str:
    return f"""# The take-home kit

Everything here works with no network and no GPU.

1. Install (once): `./install.sh` (Linux, macOS) or `powershell -ExecutionPolicy Bypass -File install.ps1`
   (Windows). It makes `.venv/` here and installs the kit from `wheels/` with pip's `--no-index`.
   It needs Python 3.11 or newer; this bundle holds wheels for Python {", ".join(pythons)} on
   {", ".join(platforms)}.
2. Activate it: `source .venv/bin/activate` (Windows: `.venv\\Scripts\\Activate.ps1`).
3. Work in `starter/`: read `starter/TASK.md` first. Every command it shows runs from that folder.

`chart/` is the vendored vLLM chart, `schemas/` the offline JSON schemas (the contract is in
`schemas/contract/`), `docs/` how the kit and its grader work.
"""


def build(
    out: Path,
    *,
    pythons: Iterable[str] = DEFAULT_PYTHONS,
    platforms: Iterable[str] = (),
    edition: str = DEFAULT_EDITION,
    echo: Callable[[str], None] = print,
) -> list[BundleResult]:
    """`grader bundle`: one archive holding every platform named when `out` is a `.tar.gz`, else one archive
    per platform in the folder `out`. `all` names every platform; none named is this machine's."""
    named = tuple(p for name in platforms for p in (ALL_PLATFORMS if name == "all" else (name,))) or DEFAULT_PLATFORMS
    versions = [p for p in pythons if p]
    if out.name.endswith((".tar.gz", ".tgz")):
        return [build_bundle(out, pythons=versions, platforms=named, edition=edition, echo=echo)]
    return build_bundles(out, pythons=versions, platforms=named, edition=edition, echo=echo)


def build_bundles(
    folder: Path,
    *,
    pythons: Iterable[str] = DEFAULT_PYTHONS,
    platforms: Iterable[str] = DEFAULT_PLATFORMS,
    edition: str = DEFAULT_EDITION,
    echo: Callable[[str], None] = print,
) -> list[BundleResult]:
    """One archive per platform in `folder` (`takehome-PLATFORM.tar.gz`): each candidate downloads only
    their own laptop's wheels."""
    pythons, platforms = tuple(pythons), tuple(platforms)
    return [
        build_bundle(
            folder / f"{TOP}-{platform}.tar.gz", pythons=pythons, platforms=(platform,), edition=edition, echo=echo
        )
        for platform in platforms
    ]


def build_bundle(
    out: Path,
    *,
    pythons: Iterable[str] = DEFAULT_PYTHONS,
    platforms: Iterable[str] = DEFAULT_PLATFORMS,
    edition: str = DEFAULT_EDITION,
    echo: Callable[[str], None] = print,
) -> BundleResult:
    """Build the candidate archive (`.tar.gz`) at `out`, its texts and stamp those of edition `edition`."""
    pythons, platforms = tuple(pythons), tuple(platforms)
    try:
        check_name(edition)
    except EditionError as exc:
        raise BundleError(f"--edition: {exc}") from None
    unknown = [p for p in platforms if p not in PLATFORMS]
    if unknown:
        raise BundleError(f"--platform {', '.join(unknown)}: unknown (known: {', '.join(PLATFORMS)})")
    bad = [p for p in pythons if not (p.startswith("3.") and p[2:].isdigit() and int(p[2:]) >= 11)]
    if bad:
        raise BundleError(f"--python {', '.join(bad)}: give versions like 3.11 (the kit needs 3.11 or newer)")
    if not out.name.endswith((".tar.gz", ".tgz")):
        raise BundleError(f"--out {out}: the bundle is a .tar.gz archive")
    root = kit_root()
    with tempfile.TemporaryDirectory(prefix="grader-bundle-") as tmp:
        stage, top = Path(tmp) / "src", Path(tmp) / TOP
        stage.mkdir()
        wheels = top / "wheels"
        wheels.mkdir(parents=True)
        _stage_sources(root, stage)
        _run(
            [sys.executable, "-m", "pip", "wheel", "--quiet", "--no-deps", "--wheel-dir", str(wheels), str(stage)],
            "the kit's wheel",
            echo,
        )
        kit_wheel = next(wheels.glob("serving_takehome_kit-*.whl")).name
        requirements = _requirements(root)
        coverage = []
        for python in pythons:
            for platform in platforms:
                _download(requirements, wheels, python, platform, echo)
                coverage.append(f"Python {python} on {platform}")
        (wheels / "COVERAGE.txt").write_text("Wheels for:\n" + "".join(f"- {c}\n" for c in coverage), encoding="utf-8")
        for name in ("starter", "chart", "schemas", "docs"):
            shutil.copytree(root / name, top / name, ignore=_IGNORE)
        for rel, text in edition_texts(root, edition).items():
            (top / rel).write_text(text, encoding="utf-8")
        stamp(top / "starter", edition_stamp(root, edition))
        _write_installers(top, kit_wheel)
        (top / "README.md").write_text(_readme(pythons, platforms), encoding="utf-8")
        out.parent.mkdir(parents=True, exist_ok=True)
        with tarfile.open(out, "w:gz") as archive:
            archive.add(top, arcname=TOP)
        names = sorted(p.name for p in wheels.glob("*.whl"))
    return BundleResult(out, out.stat().st_size, names, coverage)
