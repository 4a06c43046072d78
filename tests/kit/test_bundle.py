"""`grader bundle`: what the candidate's archive holds, what it never holds, and that it installs
and works with the network blocked (a network namespace with loopback only).

Building the archive downloads wheels with pip (the package index must be reachable here); it is
built once, for this machine's Python and platform, and shared by the tests.
"""

from __future__ import annotations

import functools
import io
import json
import os
import platform
import re
import shutil
import subprocess
import sys
import tarfile
import time
import zipfile
from importlib import metadata
from pathlib import Path

import pytest
import yaml
from kit_paths import ROOT

pytestmark = [pytest.mark.slow, pytest.mark.network]

BIN = Path(sys.executable).parent
PYTHON = f"{sys.version_info.major}.{sys.version_info.minor}"
PLATFORM = {"x86_64": "linux-x86_64", "aarch64": "linux-aarch64"}.get(platform.machine(), "linux-x86_64")

_STREAM = r"""
import json, subprocess, sys, time
import httpx
server = subprocess.Popen(["fake-server", "serve", "--port", "0", "--token-rate", "200"], stdout=subprocess.PIPE, text=True)
try:
    base = server.stdout.readline().split(" on ")[-1].strip()
    body = {"model": "fake-model", "messages": [{"role": "user", "content": "hi"}], "max_tokens": 8, "stream": True}
    with httpx.stream("POST", base + "/v1/chat/completions", json=body, timeout=30) as response:
        for line in response.iter_lines():
            if line.startswith("data: {"):
                choices = json.loads(line[6:])["choices"]
                if choices and choices[0]["delta"].get("content"):
                    print(f"FIRST-TOKEN {time.time():.3f} {choices[0]['delta']['content']!r}", flush=True)
                    break
finally:
    server.terminate()
    server.wait(timeout=10)
"""

_OFFLINE = r"""
set -eu
ip link set lo up
cd "$1"
env -u PIP_FIND_LINKS -u PIP_INDEX_URL -u PIP_EXTRA_INDEX_URL PIP_CONFIG_FILE=/dev/null ./install.sh
. .venv/bin/activate
python -c "import socket
try:
    socket.create_connection(('pypi.org', 443), timeout=3)
    print('NETWORK-REACHABLE')
except OSError as exc:
    print('NETWORK-BLOCKED', type(exc).__name__)"
python "$2"
cd starter
grader --version
rc=0; grader check . --only manifests --only memo --out ../check-report || rc=$?
echo "CHECK-EXIT $rc"
cd "$3"
rc=0; grader check . --out "$3/../reference-report" --sandboxes 2 $4 || rc=$?
echo "REFERENCE-CHECK-EXIT $rc"
python -c "import aiohttp, fastapi, numpy, openai; print('FRAMEWORKS-IMPORT', numpy.percentile([1, 2, 3, 4], 50))"
"""


# The reference's self-check from the installed kit: in `make test`, the parts graded from its files and from the
# commands it runs in the sandbox without a fake server (sizing, its own tests); the load generator and the gateway
# are graded live, whole, by the selftest every run, and by this check with SUITE_FULL=1 (`make test-full`).
PARTS = ("manifests", "memo", "sizing", "tests")
_ONLY = "" if os.environ.get("SUITE_FULL") == "1" else " ".join(f"--only {part}" for part in PARTS)


#: The bundle is a cohort's edition: its texts carry the edition's numbers, and the installed kit checks with them.
EDITION = "spring-2027"


@pytest.fixture(scope="module")
def bundle(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("bundle") / "takehome.tar.gz"
    started = time.monotonic()
    done = subprocess.run(
        [
            str(BIN / "grader"),
            "bundle",
            "--out",
            str(out),
            "--python",
            PYTHON,
            "--platform",
            PLATFORM,
            "--edition",
            EDITION,
        ],
        capture_output=True,
        text=True,
        timeout=1200,
        check=False,
    )
    assert done.returncode == 0, (done.stdout + done.stderr)[-3000:]
    print(
        f"\nbundle for Python {PYTHON} on {PLATFORM}: {out.stat().st_size / 1e6:.1f} MB, "
        f"built in {time.monotonic() - started:.0f} s"
    )
    return out


@functools.cache
def _members(path: Path) -> dict[str, bytes]:
    """Every file in the archive, and every file inside each wheel in it, by name (read once per archive)."""
    out: dict[str, bytes] = {}
    with tarfile.open(path) as archive:
        for member in archive.getmembers():
            if not member.isfile():
                continue
            extracted = archive.extractfile(member)
            assert extracted is not None  # a regular file
            data = extracted.read()
            out[member.name] = data
            if member.name.endswith(".whl") and "serving_takehome_kit" in member.name:
                with zipfile.ZipFile(io.BytesIO(data)) as wheel:
                    for name in wheel.namelist():
                        out[f"{member.name}!/{name}"] = wheel.read(name)
    return out


def _reference_phrases() -> list[str]:
    """Lines of the reference memo's text that no shipped file of the repository has."""
    body = (ROOT / "submissions/reference/memo/MEMO.md").read_text(encoding="utf-8").split("\n---", 2)[-1]
    shipped = "".join(
        p.read_text(encoding="utf-8", errors="replace")
        for folder in ("starter", "docs", "schemas/contract", "chart")
        for p in (ROOT / folder).rglob("*")
        if p.is_file()
    )
    phrases = [line.strip() for line in body.splitlines() if len(line.strip()) >= 40 and line.strip() not in shipped]
    assert len(phrases) >= 5, "the reference memo should have phrases of its own"
    return phrases


@pytest.mark.rotating(67)
def test_the_bundle_holds_the_candidates_kit(bundle: Path) -> None:
    names = set(_members(bundle))
    for needed in (
        "takehome/install.sh",
        "takehome/install.ps1",
        "takehome/README.md",
        "takehome/starter/TASK.md",
        "takehome/starter/submission.yaml",
        "takehome/starter/api_client.py",
        "takehome/chart/Chart.yaml",
        "takehome/schemas/contract/submission.schema.json",
        "takehome/docs/architecture.md",
        "takehome/wheels/COVERAGE.txt",
    ):
        assert needed in names, needed
    wheels = [n.rsplit("/", 1)[-1] for n in names if n.startswith("takehome/wheels/") and n.endswith(".whl")]
    for dist in ("serving_takehome_kit-", "pytest-", "openai-", "helm_python_sdk-", "httpx-", "uvicorn-", "pyyaml-"):
        assert any(w.lower().startswith(dist) for w in wheels), dist
    with tarfile.open(bundle) as archive:
        assert archive.getmember("takehome/install.sh").mode & 0o111


def test_the_bundle_carries_its_editions_numbers(bundle: Path) -> None:
    """TASK.md, fleet.yaml, the chart's values and the gateway config example are the edition's, as
    grader/kit/edition_texts.py writes them, and the candidate's submission.yaml names the edition."""
    from grader.kit.edition_texts import edition_texts
    from grader.rubric.editions import memo_scenario

    members = _members(bundle)
    for rel, text in edition_texts(ROOT, EDITION).items():
        shipped = members[f"takehome/{rel}"].decode()
        if rel == "starter/TASK.md":  # and the stamp's line under its title
            assert f"_Edition {EDITION}, contract 4," in shipped
            shipped = re.sub(r"\n\n_Edition [^\n]*\n", "\n", shipped, count=1)
        assert shipped == text, rel
    scenario = memo_scenario(EDITION)
    assert f"served_model_name: [{scenario.served}]" in members["takehome/starter/fleet.yaml"].decode()
    stamp = yaml.safe_load(members["takehome/starter/submission.yaml"])["edition"]
    assert stamp["name"] == EDITION


def test_bundle_refuses_an_edition_name_that_is_none() -> None:
    done = subprocess.run(
        [str(BIN / "grader"), "bundle", "--out", "x.tar.gz", "--platform", PLATFORM, "--edition", "Spring 2027"],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 2 and "Traceback" not in done.stderr
    assert "--edition: edition 'Spring 2027': a name is 1 to 40 lower-case letters" in done.stderr


@pytest.mark.rotating(2)
def test_the_bundle_holds_no_reference_chaff_or_unseen_material(bundle: Path) -> None:
    members = _members(bundle)
    for name in members:
        lowered = name.lower()
        assert "submissions" not in lowered and "chaff" not in lowered and "reference" not in lowered, name
        assert "/unseen/" not in lowered and "/tests/" not in lowered.replace("starter/loadgen/tests/", ""), name
    rubric_name = next(n for n in members if n.endswith("!/grader/rubric/rubric.yaml"))
    shipped_rubric = yaml.safe_load(members[rubric_name])
    assert {c["visibility"] for c in shipped_rubric["criteria"]} == {"public"}
    full = yaml.safe_load((ROOT / "grader/rubric/rubric.yaml").read_text(encoding="utf-8"))
    public = {c["id"] for c in full["criteria"] if c["visibility"] == "public"}
    assert {c["id"] for c in shipped_rubric["criteria"]} == public
    hidden_ids = [c["id"] for c in full["criteria"] if c["visibility"] != "public"]
    phrases = _reference_phrases()
    unseen_files = sorted(p.relative_to(ROOT).as_posix() for p in (ROOT / "grader/unseen").rglob("*") if p.is_file())
    # the unseen variants and input sets, the interview's question bank and the live exercises' pool
    for listed in ("variants.yaml", "sizing_sets.yaml", "questions.yaml", "live.yaml"):
        assert f"grader/unseen/{listed}" in unseen_files, f"{listed} is where this test looks for it"
        assert not any(n.endswith((f"/unseen/{listed}", f"/{listed}")) for n in members), listed
    unseen = [(ROOT / f).read_text(encoding="utf-8") for f in unseen_files]
    bank = yaml.safe_load((ROOT / "grader/unseen/questions.yaml").read_text(encoding="utf-8"))["questions"]
    pool = yaml.safe_load((ROOT / "grader/unseen/live.yaml").read_text(encoding="utf-8"))["exercises"]
    # what a candidate could rehearse: no question, no good answer, no exercise's words, no live chaff
    secrets = [" ".join(q[k].split())[:60] for q in bank for k in ("ask", "good_answer")]
    secrets += [" ".join(e[k].split())[:60] for e in pool.values() for k in ("tell", "watch_for")]
    for name, data in members.items():
        if name.endswith(".whl"):  # a wheel as a whole: the kit's is read file by file (its `!/` entries), the
            continue  # others are the dependencies' own, downloaded from the package index
        text = " ".join(data.decode("utf-8", errors="ignore").split())
        leaked = [p for p in phrases if p in text] + [h for h in hidden_ids if re.search(rf"\b{re.escape(h)}\b", text)]
        leaked += [name for body in unseen if len(body) > 40 and body in text]
        leaked += [secret for secret in secrets if secret in text]
        assert not leaked, (name, leaked[:3])
        assert "live-chaff" not in name, name


@pytest.mark.rotating(115)
def test_the_bundle_installs_and_self_checks_with_the_network_blocked(bundle: Path, tmp_path: Path) -> None:
    started = time.time()
    with tarfile.open(bundle) as archive:
        archive.extractall(tmp_path, filter="data")
    top = tmp_path / "takehome"
    stream = tmp_path / "stream_once.py"
    stream.write_text(_STREAM)
    # A complete submission, worked on where a candidate works: beside the kit's starter/, with no
    # api_client.py of its own (the kit's stub client must be found wherever the kit is installed).
    work = top / "my-submission"
    shutil.copytree(ROOT / "submissions" / "reference", work, ignore=shutil.ignore_patterns("__pycache__"))
    assert not (work / "api_client.py").exists()
    unshare = ["unshare", "--net"] + ([] if os.geteuid() == 0 else ["--map-root-user"])
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTEST", "PYTHONPATH", "VIRTUAL_ENV"))}
    env["PATH"] = "/usr/local/bin:/usr/bin:/bin:/usr/sbin:/sbin"
    done = subprocess.run(
        [*unshare, "sh", "-c", _OFFLINE, "offline", str(top), str(stream), str(work), _ONLY],
        env=env,
        capture_output=True,
        text=True,
        timeout=1500,
        check=False,
    )
    output = done.stdout + done.stderr
    assert done.returncode == 0, output[-4000:]
    assert "NETWORK-BLOCKED" in output and "NETWORK-REACHABLE" not in output
    first_token = re.search(r"FIRST-TOKEN (\d+\.\d+)", output)
    assert first_token is not None, output[-4000:]
    first = float(first_token.group(1))
    print(f"\nunpack to first streamed token, offline: {first - started:.1f} s")
    # the bundle says what made it, and the check prints it: edition, kit version, contract, rubric digest
    stamp = re.search(
        rf"follows contract 4; its bundle: name {EDITION}, kit (\S+), contract 4, rubric ([0-9a-f]{{16}})", output
    )
    assert "== contract" in output and stamp, output[-4000:]
    assert stamp.group(1) == metadata.version("serving-takehome-kit")
    assert "public criteria only" in output
    assert re.search(r"^FAIL\s", output, re.MULTILINE), "the skeleton's failures are shown"
    assert "CHECK-EXIT 1" in output  # the skeleton does not pass
    assert (top / "check-report" / "report.html").is_file()
    assert "Traceback" not in output
    # The reference, self-checked from the installed kit: every public criterion passes (a machine too busy
    # to keep time may leave a timing criterion inconclusive, never failed), and the check says what it
    # did not run.
    assert re.search(r"REFERENCE-CHECK-EXIT [01]\b", output), output[-6000:]
    report = json.loads((top / "reference-report" / "report.json").read_text())
    statuses = {t["name"].split(":")[0]: t["extra_data"]["status"] for t in report["tests"]}
    wrong = {k: v for k, v in statuses.items() if v != "passed"}
    assert statuses and set(wrong.values()) <= {"inconclusive"} and len(wrong) <= 2, wrong
    if not wrong:
        assert "REFERENCE-CHECK-EXIT 0" in output and report["score"] == report["max_score"] > 0
    assert "unseen variants" in output and "Not run here" in output
    # What serving engineers reach for first is installed offline (numpy's default percentile interpolates).
    # The submission built on them is held to full marks by its recorded runs and, in turn, graded live by
    # tests/kit/test_selftest.py.
    assert "FRAMEWORKS-IMPORT 2.5" in output
