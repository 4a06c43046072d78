"""The built wheel, installed (not editable) into a fresh virtual environment, is a complete kit.

The wheel is built offline from a copy of the sources (pip wheel --no-build-isolation) and
installed with --no-deps into a new venv; the kit's dependencies come from the test's own
environment through a path entry, so only the wheel's own files provide `fake_server` and
`grader`. Every command then runs from an unrelated folder.
"""

from __future__ import annotations

import json
import shutil
import site
import subprocess
import sys
import time
import zipfile
from pathlib import Path

import httpx
import pytest
from kit_paths import ROOT

pytestmark = pytest.mark.slow


def _build_wheel(dest: Path) -> Path:
    src = dest / "src"
    src.mkdir()
    for name in ("pyproject.toml", "setup.py", "MANIFEST.in", "README.md"):
        shutil.copy2(ROOT / name, src / name)
    ignore = shutil.ignore_patterns("__pycache__", "*.pyc")
    for name in ("fake_server", "grader", "schemas", "chart"):
        shutil.copytree(ROOT / name, src / name, ignore=ignore)
    (src / "starter").mkdir()
    shutil.copy2(ROOT / "starter" / "api_client.py", src / "starter" / "api_client.py")
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "wheel",
            "--quiet",
            "--no-deps",
            "--no-build-isolation",
            "--no-index",
            "--wheel-dir",
            str(dest / "dist"),
            str(src),
        ],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    (wheel,) = (dest / "dist").glob("serving_takehome_kit-*.whl")
    return wheel


@pytest.fixture(scope="module")
def installed(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    work = tmp_path_factory.mktemp("wheel")
    wheel = _build_wheel(work)
    venv = work / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True, timeout=120)
    python = venv / "bin" / "python"
    purelib = Path(
        subprocess.run(
            [str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
            capture_output=True,
            text=True,
            check=True,
        ).stdout.strip()
    )
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "install",
            "--quiet",
            "--no-deps",
            "--no-index",
            "--target",
            str(purelib),
            str(wheel),
        ],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    # Console scripts: pip --target does not write them into the venv's bin/, so call the entry points.
    for name, target in (("fake-server", "fake_server.cli"), ("grader", "grader.cli")):
        script = venv / "bin" / name
        script.write_text(f"#!{python}\nimport sys\nfrom {target} import main\nsys.exit(main())\n")
        script.chmod(0o755)
    # The dependencies, from this environment's site-packages; its .pth files (the editable
    # install's finder among them) are not processed from a plain path entry.
    (purelib / "kit_deps.pth").write_text("\n".join(site.getsitepackages()) + "\n")
    elsewhere = work / "elsewhere"
    elsewhere.mkdir()
    return {"wheel": wheel, "venv": venv, "python": python, "purelib": purelib, "cwd": elsewhere}


def _run(installed: dict[str, Path], *argv: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(installed["venv"] / "bin" / argv[0]), *argv[1:]],
        cwd=installed["cwd"],
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )


def test_the_wheel_carries_schemas_chart_scenarios_and_rubric(installed: dict[str, Path]) -> None:
    names = zipfile.ZipFile(installed["wheel"]).namelist()
    for needed in (
        "grader/_kit/schemas/contract/submission.schema.json",
        "grader/_kit/chart/Chart.yaml",
        "grader/_kit/chart/templates/deployment.yaml",
        "grader/_kit/schemas/grader/rubric.schema.json",
        "fake_server/scenarios/baseline.yaml",
        "grader/rubric/rubric.yaml",
        "grader/running/injected/sitecustomize.py",
        "grader/_kit/starter/api_client.py",
    ):
        assert needed in names
    assert not any(n.startswith(("submissions/", "tests/", "starter/")) for n in names)
    metadata = next(n for n in names if n.endswith(".dist-info/METADATA"))
    text = zipfile.ZipFile(installed["wheel"]).read(metadata).decode()
    assert "Provides-Extra: candidate" in text and 'pytest>=8; extra == "candidate"' in text


def test_imports_come_from_the_installed_wheel(installed: dict[str, Path]) -> None:
    done = _run(
        installed, "python", "-c", "import fake_server, grader; print(fake_server.__file__); print(grader.__file__)"
    )
    assert done.returncode == 0, done.stderr
    for line in done.stdout.split():
        assert Path(line).is_relative_to(installed["purelib"]), line


def test_fake_server_serves_a_stream_from_an_unrelated_folder(installed: dict[str, Path]) -> None:
    proc = subprocess.Popen(
        [
            str(installed["venv"] / "bin" / "fake-server"),
            "serve",
            "--scenario",
            "baseline",
            "--port",
            "0",
            "--token-rate",
            "500",
        ],
        cwd=installed["cwd"],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    try:
        assert proc.stdout is not None  # stdout=PIPE
        line = proc.stdout.readline()
        assert "serving" in line, line
        base = line.split(" on ")[-1].strip()
        body = {"model": "fake-model", "messages": [{"role": "user", "content": "hi"}], "max_tokens": 4, "stream": True}
        content = []
        deadline = time.monotonic() + 30
        with httpx.stream("POST", f"{base}/v1/chat/completions", json=body, timeout=30) as response:
            assert response.status_code == 200
            for raw in response.iter_lines():
                assert time.monotonic() < deadline
                if raw.startswith("data: {"):
                    delta = json.loads(raw[6:])["choices"]
                    if delta and delta[0]["delta"].get("content"):
                        content.append(delta[0]["delta"]["content"])
        assert content
    finally:
        proc.terminate()
        proc.wait(timeout=10)


def test_grader_contract_and_manifests_work_from_an_unrelated_folder(installed: dict[str, Path]) -> None:
    starter = installed["cwd"] / "starter"
    shutil.copytree(ROOT / "starter", starter, ignore=shutil.ignore_patterns("__pycache__"), dirs_exist_ok=True)
    done = _run(installed, "grader", "contract", "starter")
    assert done.returncode == 0, done.stderr
    assert "starter/submission.yaml: follows contract 4" in done.stdout

    chart = _run(
        installed, "python", "-c", "from grader.shared.kit_files import chart_dir; print(chart_dir())"
    ).stdout.strip()
    assert Path(chart).is_relative_to(installed["purelib"])
    shutil.copy2(ROOT / "submissions" / "reference" / "manifests" / "values.yaml", installed["cwd"] / "complete.yaml")
    done = _run(installed, "grader", "manifests", chart, "--values", "complete.yaml", timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "PASS  schema-valid" in done.stdout and "no schema for" not in done.stdout

    done = _run(installed, "grader", "manifests", chart, "--values", "starter/manifests/values.yaml", timeout=300)
    assert done.returncode == 1, done.stdout + done.stderr  # the skeleton's placeholders fail on purpose
    assert "FAIL  render" in done.stdout and "at starter/manifests/values.yaml:" in done.stdout
    assert "Traceback" not in done.stderr

    shutil.copytree(chart, installed["cwd"] / "chart", dirs_exist_ok=True)
    done = _run(installed, "grader", "manifests", "chart", "--values", "complete.yaml", timeout=300)
    assert done.returncode == 0 and "grader manifests: chart rendered with complete.yaml" in done.stdout


def test_demo_runs_on_the_base_dependencies(installed: dict[str, Path]) -> None:
    code = "import sys, fake_server.demo as d; d.main(); assert 'openai' not in sys.modules, 'demo imported openai'"
    done = _run(installed, "python", "-c", code, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    assert "ledger TTFT ms" in done.stdout


def test_the_sandbox_shows_candidates_the_installed_chart_and_schemas(installed: dict[str, Path]) -> None:
    code = (
        "from grader.sandbox.layout import kit_paths; from grader.shared.kit_files import kit_dir; p = kit_paths(); "
        "print(kit_dir('chart')); print(kit_dir('schemas')); print('\\n'.join(map(str, p.extras)))"
    )
    done = _run(installed, "python", "-c", code)
    assert done.returncode == 0, done.stderr
    chart, schemas, *extras = done.stdout.split()
    assert Path(chart).is_relative_to(installed["purelib"]) and (Path(chart) / "Chart.yaml").is_file()
    assert {str(Path(chart).resolve()), str(Path(schemas).resolve())} <= set(extras), extras
