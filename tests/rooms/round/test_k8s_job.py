"""The Kubernetes Indexed Job: valid against the kit's offline schemas, unprivileged unless asked (its own
user namespace, no_new_privs, RuntimeDefault seccomp, the sandbox's few capabilities), each index's
command grading its own submission (run here as the pods would, without a cluster), the reports merged
by --merge, and the Containerfile's image carrying what grading needs and no submissions. That the
pod it describes runs the sandbox, and needs each capability it keeps, is tested in
tests/hostile/test_sandbox_rows.py."""

from __future__ import annotations

import csv
import dataclasses
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml
from grader_cli import run_grader
from kit_paths import ROOT, TESTS

from grader.grading.archive import MAX_BYTES
from grader.kit.chaff import materialize
from grader.round.k8s_job import CAPABILITIES, JobError, JobSpec, check_job, job_manifest, write_job

sys.path.insert(0, str(TESTS / "pods"))
from expect import job_seed, job_submissions

SUBMISSIONS = ROOT / "submissions"
NAMES = ["manifests-no-gpu", "manifests-pdb-no-selector", "reference"]  # sorted: index order


@pytest.fixture(scope="module")
def round_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("round")
    shutil.copytree(SUBMISSIONS / "reference", folder / "reference", ignore=shutil.ignore_patterns("__pycache__"))
    for name in NAMES[:2]:
        materialize(SUBMISSIONS / "chaff" / name, folder / name)
    return folder


@pytest.fixture(scope="module")
def job(round_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, Any]]:
    path = tmp_path_factory.mktemp("job") / "job.yaml"
    done = run_grader(
        "grade-many",
        round_dir,
        "--emit-k8s-job",
        path,
        "--only",
        "manifests",
        "--parallelism",
        "2",
        "--image",
        "registry.example/grader:0.1.0",
        "--job-name",
        "round-7",
    )
    assert done.returncode == 0, done.stderr
    return path, yaml.safe_load(path.read_text())


def test_the_emitted_job_is_indexed_and_validates_offline(job: tuple[Path, dict[str, Any]]) -> None:
    path, data = job
    spec = data["spec"]
    assert (data["apiVersion"], data["kind"], data["metadata"]["name"]) == ("batch/v1", "Job", "round-7")
    assert spec["completionMode"] == "Indexed" and spec["completions"] == len(NAMES) and spec["parallelism"] == 2
    container = spec["template"]["spec"]["containers"][0]
    assert container["image"] == "registry.example/grader:0.1.0"
    assert container["args"][-len(NAMES) :] == [f"/submissions/{n}" for n in NAMES]
    assert "$(JOB_COMPLETION_INDEX)" in container["args"]
    # The kit's own checker, as a user runs it: strict schema validation of batch/v1 Job passes.
    checked = run_grader("manifests", path, "--format", "json")
    report = json.loads(checked.stdout)
    schema = next(c for c in report["checks"] if c["id"] == "schema-valid")
    assert all(f["passed"] for f in schema["findings"]) and schema["findings"], schema
    assert "Job/round-7" in {f["resource"] for f in schema["findings"]}


def _pod(data: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    pod = data["spec"]["template"]["spec"]
    return pod, pod["containers"][0]["securityContext"]


def test_the_job_is_unprivileged_by_default(job: tuple[Path, dict[str, Any]]) -> None:
    path, data = job
    pod, security = _pod(data)
    assert pod["hostUsers"] is False  # the pod's root is an unprivileged uid on the node
    assert "runtimeClassName" not in pod
    assert security == {
        "privileged": False,
        "allowPrivilegeEscalation": False,
        "readOnlyRootFilesystem": True,
        "capabilities": {"drop": ["ALL"], "add": list(CAPABILITIES)},
        "seccompProfile": {"type": "RuntimeDefault"},
    }
    # The image is read-only; what a grade writes beside its reports goes to a bounded emptyDir at /tmp.
    volumes = {v["name"]: v for v in pod["volumes"]}
    mounts = {m["mountPath"]: volumes[m["name"]] for m in pod["containers"][0]["volumeMounts"]}
    assert sorted(mounts) == ["/reports", "/submissions", "/tmp"]
    limit = mounts["/tmp"]["emptyDir"]["sizeLimit"]
    assert limit.endswith("Gi") and int(limit[:-2]) * 1024**3 >= 2 * MAX_BYTES  # twice the largest unpack, at least
    # The API refuses allowPrivilegeEscalation: false beside "CAP_SYS_ADMIN"; capabilities are named bare.
    assert not any(cap.startswith("CAP_") for cap in CAPABILITIES)
    assert "privileged: true" not in path.read_text().lower()
    assert "# Unprivileged: the pod's own user namespace (hostUsers: false" in path.read_text()
    # Each capability kept is named, with why, where the Job is documented.
    docs = (ROOT / "docs" / "grading-many.md").read_text()
    assert all(f"`{cap}`" in docs for cap in CAPABILITIES)


def test_privileged_and_a_runtime_class_are_explicit_and_validate(tmp_path: Path) -> None:
    spec = JobSpec(names=NAMES, image="registry.example/grader:0.1.0")
    privileged = tmp_path / "privileged.yaml"
    text = write_job(dataclasses.replace(spec, privileged=True), privileged)  # checked offline as it is written
    pod, security = _pod(yaml.safe_load(text))
    # privileged in place of its own user namespace; the image read-only all the same
    assert security == {"privileged": True, "readOnlyRootFilesystem": True} and "hostUsers" not in pod
    assert "# PRIVILEGED, as chosen" in text and check_job(privileged) == []

    gvisor = tmp_path / "gvisor.yaml"
    text = write_job(dataclasses.replace(spec, runtime_class="gvisor"), gvisor)
    pod, security = _pod(yaml.safe_load(text))
    assert pod["runtimeClassName"] == "gvisor" and pod["hostUsers"] is False and security["privileged"] is False
    assert check_job(gvisor) == []
    assert (
        job_manifest(dataclasses.replace(spec, runtime_class="kata-qemu.v2"))["spec"]["template"]["spec"][
            "runtimeClassName"
        ]
        == "kata-qemu.v2"
    )
    with pytest.raises(JobError, match="runtime-class 'gVisor'"):
        job_manifest(dataclasses.replace(spec, runtime_class="gVisor"))


def test_an_invalid_job_is_caught_by_the_same_check(job: tuple[Path, dict[str, Any]], tmp_path: Path) -> None:
    path, _ = job
    broken = tmp_path / "broken.yaml"
    broken.write_text(path.read_text().replace("completionMode: Indexed", "completionMode: Indexed\n  completion: 3"))
    problems = check_job(broken)
    assert problems and any("completion" in p for p in problems), problems
    assert check_job(path) == []
    bad = run_grader(
        "grade-many", SUBMISSIONS / "reference", "--emit-k8s-job", tmp_path / "j.yaml", "--job-name", "Round_7"
    )
    assert bad.returncode == 2 and "job-name 'Round_7': must be a DNS label" in bad.stderr


@pytest.mark.slow
@pytest.mark.rotating(30)
def test_each_index_grades_its_submission_and_merge_builds_the_csv(
    job: tuple[Path, dict[str, Any]], round_dir: Path, tmp_path: Path
) -> None:
    _, data = job
    args = data["spec"]["template"]["spec"]["containers"][0]["args"]
    volumes = {"/submissions": str(round_dir)}
    node_a, node_b = tmp_path / "node-a", tmp_path / "node-b"  # two copies of the reports volume
    for index in range(len(NAMES)):
        reports = node_a if index < 2 else node_b
        argv = [a.replace("$(JOB_COMPLETION_INDEX)", str(index)) for a in args]
        argv = [
            reports.as_posix() if a == "/reports" else re.sub(r"^/submissions", volumes["/submissions"], a)
            for a in argv
        ]
        done = run_grader(*argv)
        assert done.returncode == 0, done.stderr
        assert f"{NAMES[index]}: graded" in done.stdout
        assert not (reports / "grades.csv").exists()  # a pod writes its report folder only
    assert sorted(p.name for p in node_a.iterdir() if not p.name.startswith(".")) == NAMES[:2]
    assert [p.name for p in node_b.iterdir() if not p.name.startswith(".")] == NAMES[2:]

    merged = tmp_path / "merged"
    done = run_grader("grade-many", "--merge", node_a, node_b, "--out", merged)
    assert done.returncode == 0, done.stderr
    # One exam: every pod graded at the seed the Job gives it, and the merged grades.csv is byte for byte what a
    # local grade-many of the round at that seed writes (what the pod test, `make test-image`, holds the pods to).
    seed = job_seed(data)
    assert {
        json.loads((n / name / "report.json").read_text())["extra_data"]["kit"]["seed"]
        for n in (node_a, node_b)
        for name in NAMES
        if (n / name).is_dir()
    } == {seed}
    assert job_submissions(data) == NAMES
    local = tmp_path / "local"
    done = run_grader("grade-many", round_dir, "--out", local, "--only", "manifests", "--jobs", "1", "--seed", seed)
    assert done.returncode == 0, done.stderr
    assert (merged / "grades.csv").read_text() == (local / "grades.csv").read_text()
    with (merged / "grades.csv").open(newline="") as f:
        rows = list(csv.DictReader(f))
    assert [r["name"] for r in rows] == ["reference", "manifests-no-gpu", "manifests-pdb-no-selector"]
    by_name = {r["name"]: r for r in rows}
    assert by_name["manifests-no-gpu"]["manifests.gpu-request"] == "0"
    assert by_name["manifests-no-gpu"]["manifests.pdb-selects-pods"] == "1"
    assert by_name["manifests-pdb-no-selector"]["manifests.pdb-selects-pods"] == "0"
    assert by_name["manifests-pdb-no-selector"]["manifests.gpu-request"] == "1"
    assert by_name["reference"]["rank"] == "1" and by_name["reference"]["score"] == by_name["reference"]["max_score"]
    for name in NAMES:
        assert (merged / name / "report.html").is_file()
        assert f'href="{name}/report.html"' in (merged / "index.html").read_text()

    missing = run_grader("grade-many", "--merge", node_a, node_a / "reference", "--out", merged)  # node_a has none
    assert missing.returncode == 2 and "reference: no such folder" in missing.stderr
    duplicate = run_grader("grade-many", "--merge", node_a, node_a / NAMES[0], "--out", tmp_path / "m2")
    assert duplicate.returncode == 2 and f"two report folders named {NAMES[0]!r}" in duplicate.stderr


WHEELS = "build/wheels/"  # made by `make image` (make wheels) before the build


def _copied_sources() -> list[str]:
    """What the Containerfile copies from the build context (not from its own install stage), the wheels aside."""
    sources: list[str] = []
    for line in (ROOT / "Containerfile").read_text().splitlines():
        if line.startswith("COPY ") and not line.startswith("COPY --from="):
            sources += [s for s in line.split()[1:-1] if s != WHEELS]
    return sources


def test_the_image_holds_the_kit_and_bubblewrap_but_no_submissions() -> None:
    text = (ROOT / "Containerfile").read_text()
    assert re.search(r"apt-get install .*\bbubblewrap\b", text)
    sources = _copied_sources()
    assert sources and all((ROOT / s).exists() for s in sources), sources
    assert not any(s.rstrip("/").split("/")[0] in ("submissions", "tests", "bench", "docs", ".") for s in sources)
    assert re.search(r'ENTRYPOINT \["grader"\]', text)
    # The base is a build argument (the public slim image unless told), every stage starts from it, and the
    # packages come from the wheels gathered beforehand: the build asks no package index.
    assert re.search(r"^ARG BASE=docker\.io/library/python:3\.11-slim-bookworm$", text, re.MULTILINE)
    assert re.findall(r"^FROM (\S+)", text, re.MULTILINE) == ["${BASE}", "${BASE}"]
    assert f"COPY {WHEELS} /tmp/wheels/" in text and "--no-index --find-links /tmp/wheels" in text
    assert re.findall(r"^COPY --from=install (\S+)", text, re.MULTILINE) == ["/opt/grader", "/kit"]
    # Nor are they sent to the build: the context leaves them out.
    ignored = (ROOT / ".dockerignore").read_text().split()
    assert {"submissions", "tests", "bench", "docs", ".git", ".venv"} <= set(ignored), ignored
    makefile = (ROOT / "Makefile").read_text()
    assert "--build-arg BASE=$(BASE)" in makefile


def test_the_kit_the_image_copies_grades_without_submissions(round_dir: Path, tmp_path: Path) -> None:
    """The Containerfile's sources alone, imported ahead of this checkout, grade a submission's manifests.

    (The sandboxed sections need the kit installed, as the image does; on PYTHONPATH alone the sandbox's
    harness cannot import it, so they are left out here.)"""
    kit = tmp_path / "kit"
    for source in _copied_sources():
        path = ROOT / source
        if path.is_dir():
            shutil.copytree(path, kit / source, ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
        else:
            (kit / source).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(path, kit / source)
    assert not (kit / "submissions").exists()
    env = {**os.environ, "PYTHONPATH": str(kit)}
    out = tmp_path / "out"
    done = run_grader(
        "grade-many", round_dir / "manifests-no-gpu", "--out", out, "--only", "manifests", cwd=kit, env=env
    )
    assert done.returncode == 0, done.stderr
    kit_data = json.loads((out / "manifests-no-gpu" / "report.json").read_text())["extra_data"]["kit"]
    assert kit_data["rubric"].startswith(str(kit))  # graded by the copy, not by this checkout
    statuses = {c["id"]: c["status"] for c in kit_data["criteria"]}
    assert statuses["manifests.gpu-request"] == "failed"
    assert all(s == "passed" for cid, s in statuses.items() if cid != "manifests.gpu-request"), statuses


def test_the_command_line_asks_for_privilege_and_a_runtime_class_explicitly(tmp_path: Path) -> None:
    import sys

    subs = tmp_path / "subs"
    (subs / "alice").mkdir(parents=True)
    (subs / "alice" / "submission.yaml").write_text("contract: 1\n")
    base = [sys.executable, "-m", "grader.cli", "grade-many", str(subs), "--emit-k8s-job"]
    plain = subprocess.run([*base, str(tmp_path / "plain.yaml")], capture_output=True, text=True, check=False)
    assert plain.returncode == 0 and "unprivileged pods" in plain.stdout, plain.stderr
    asked = subprocess.run(
        [*base, str(tmp_path / "priv.yaml"), "--privileged", "--runtime-class", "gvisor"],
        capture_output=True,
        text=True,
        check=False,
    )
    assert asked.returncode == 0 and "PRIVILEGED pods under RuntimeClass gvisor" in asked.stdout, asked.stderr
    pod = yaml.safe_load((tmp_path / "priv.yaml").read_text())["spec"]["template"]["spec"]
    assert pod["runtimeClassName"] == "gvisor"
    assert pod["containers"][0]["securityContext"] == {"privileged": True, "readOnlyRootFilesystem": True}
