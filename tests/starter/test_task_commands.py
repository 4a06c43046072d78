"""Every command TASK.md shows, run from the candidate's folder as the bundle lays it out.

The folder is `takehome/starter/` with `chart/`, `schemas/` and `docs/` beside it. Each command runs
in its own network namespace with loopback only (the candidate has no network, and the fake
server's fixed ports then cannot clash with anything else on this machine). A command that
serves runs until it prints where it serves, then is stopped. Nothing may answer "no such file",
exit 2 (usage, a missing path) or show a traceback.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest
from kit_paths import ROOT

TASK = ROOT / "starter" / "TASK.md"
BIN = Path(sys.executable).parent
_SERVES = ("fake-server serve --scenario", "fake-server serve --max", "fake-server fleet")
_INSTALL = ("./install.sh", "source ", "cd ")


def _blocks(text: str) -> list[list[str]]:
    return [block.strip("\n").splitlines() for block in re.findall(r"^```\n(.*?)^```", text, re.DOTALL | re.MULTILINE)]


def task_commands() -> list[str]:
    """The shell commands of TASK.md's code blocks, comments stripped (flag lists and signatures are not commands)."""
    out = []
    for block in _blocks(TASK.read_text(encoding="utf-8")):
        for line in block:
            command = line.split("#", 1)[0].strip()
            if command.split(" ", 1)[0] in ("fake-server", "grader", "python", "pytest"):
                out.append(command)
    return out


def _netns(argv: list[str]) -> list[str]:
    unshare = ["unshare", "--net"] + ([] if os.geteuid() == 0 else ["--map-root-user"])
    return [*unshare, "sh", "-c", 'ip link set lo up && exec "$@"', "sh", *argv]


@pytest.fixture(scope="module")
def candidate(tmp_path_factory: pytest.TempPathFactory) -> Path:
    top = tmp_path_factory.mktemp("bundle") / "takehome"
    ignore = shutil.ignore_patterns("__pycache__", "*.pyc", "check-report")
    shutil.copytree(ROOT / "starter", top / "starter", ignore=ignore)
    for name in ("chart", "schemas", "docs"):
        shutil.copytree(ROOT / name, top / name, ignore=ignore)
    starter = top / "starter"
    # An output to check, as the skeleton load generator writes it (it sends nothing).
    subprocess.run(
        [
            sys.executable,
            "loadgen/loadgen.py",
            "--base-url",
            "http://127.0.0.1:9/v1",
            "--model",
            "m",
            "--requests",
            "1",
            "--concurrency",
            "1",
            "--prompt-tokens",
            "8",
            "--max-tokens",
            "8",
            "--output",
            "out.json",
        ],
        cwd=starter,
        check=True,
        capture_output=True,
        timeout=60,
    )
    return starter


def _env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTEST", "PYTHONPATH"))}
    env["PATH"] = f"{BIN}{os.pathsep}{env.get('PATH', '')}"
    return env


def test_task_md_starts_with_the_install_and_shows_every_self_check() -> None:
    text = TASK.read_text(encoding="utf-8")
    sections = re.findall(r"^## (.+)$", text, re.MULTILINE)
    assert sections[0].startswith("Install"), sections
    install = _blocks(text)[0]
    assert any(line.startswith("./install.sh") for line in install) and any("cd starter" in line for line in install)
    commands = task_commands()
    for needed in (
        "grader check",
        "grader contract .",
        "grader manifests ../chart --values manifests/values.yaml",
        "grader memo memo/MEMO.md",
        "fake-server fleet fleet.yaml",
    ):
        assert needed in commands, needed
    assert not [c for c in commands if re.search(r"(?<![./\w])(chart|schemas)/", c)], "a path from the wrong folder"


@pytest.mark.slow
@pytest.mark.parametrize("command", task_commands())
def test_each_task_command_runs_from_the_candidates_folder(candidate: Path, command: str) -> None:
    argv = command.split()
    if argv[:2] == ["grader", "check"] and "--only" not in argv:
        # The skeleton's untimed sections: the command and the kit's files are what is tested here. The
        # skeleton's whole grade (a minute, mostly waiting for a gateway that never probes) is the
        # selftest's starter-untouched chaff, and the bundle test checks the reference from an install.
        argv += ["--only", "manifests", "--only", "memo", "--only", "sizing"]
    if command.startswith(_SERVES):
        proc = subprocess.Popen(
            _netns(argv), cwd=candidate, env=_env(), stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True
        )
        try:
            assert proc.stdout is not None  # stdout=PIPE
            lines: list[str] = []
            deadline = time.monotonic() + 60
            wanted = 3 if argv[1] == "fleet" else 1  # the fleet file has three servers
            while sum("http://127.0.0.1:" in line for line in lines) < wanted:
                assert time.monotonic() < deadline and proc.poll() is None, "".join(lines)
                lines.append(proc.stdout.readline())
        finally:
            proc.terminate()
            proc.wait(timeout=20)
        output = "".join(lines)
    else:
        done = subprocess.run(
            _netns(argv), cwd=candidate, env=_env(), capture_output=True, text=True, timeout=600, check=False
        )
        output = done.stdout + done.stderr
        assert done.returncode in (0, 1), (done.returncode, output[-3000:])
        if argv[:2] == ["grader", "contract"] or argv[-1] == "--help" or argv[1] == "scenarios":
            assert done.returncode == 0, output[-3000:]
        if argv[:2] == ["grader", "check"]:
            assert "public criteria only" in output and "== contract" in output
    assert "Traceback" not in output
    assert "no such file" not in output.lower(), output[-3000:]
