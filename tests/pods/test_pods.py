"""The grader's image built here and the emitted Indexed Job's pods run for real under podman.

- `make image` builds from a base made from Debian's packages (images.py), and the image holds the
  kit, bubblewrap and nothing of submissions/, the tests, the benchmarks or the docs;
- every index of the Job over a round of six (the reference, the frameworks submission, four chaff)
  runs as its pod would (pod.py maps each field of the pod template), the parts are merged with
  `grade-many --merge`, and grades.csv is the one a local `grade-many` of the same round writes;
  each report's sandbox line says what held inside the pod (bubblewrap's namespaces, rlimits where
  no cgroup can be written, the candidate's own uid);
- the cheap hostile programs graded inside the pod: each contained, reported, nothing of it left
  running, nothing written outside its work folder (the pod's own filesystem, by `podman diff`).

The pods run one at a time: each asks for 2 CPUs, and this machine has two, so a scheduler would
place one at a time here too. About 25 minutes on two cores: `make test-image` (POD_TEST=1); the
figures (image size, seconds per pod and per grade, the report lines) and each test's outcome, with the date and
the commit, go to bench/results/pods.json (tests/pod_results.py), where the next person sees the last real run.
"""

from __future__ import annotations

import csv
import io
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import expect
import images
import pod
import pytest
import yaml
from grader_cli import run_grader
from pod_results import record as _record

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "hostile"))
from hostile_cases import _EVERY_ROW, _RLIMITS, BY_ID, ONLY
from hostile_grading import findings, make_submission, processes_with

from grader.kit.chaff import materialize
from grader.round.many import pick, pod_entries

ROOT = images.ROOT
FULL = os.environ.get("POD_TEST") == "1"
pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(not FULL, reason="about 25 minutes on two cores: make test-image (POD_TEST=1)"),
]
CHAFF = ["gateway-retry-twice", "ttft-from-headers", "manifests-no-gpu", "sizing-no-replica-floor"]
CLAIMS = ("grader-submissions", "grader-reports")
# What every report's sandbox line must say inside the pod: no cgroup can be written there.
POD_LINE = [
    *_EVERY_ROW,
    *_RLIMITS,
    "own network (loopback only), PID and IPC namespaces",
    "killed at its end by a sweep of the candidate's uid",
    "(Read-only file system)",
]
HOSTILE = [
    "infinite_loop-gateway",
    "fork_bomb-loadgen",
    "memory_hog-loadgen",
    "daemon-loadgen",
    "network-loadgen",
    "write_outside-loadgen",
]
# All a pod may change in its own filesystem, which the Job makes read-only: the mount points the
# runtime makes for its volumes and for /etc/hosts. A write anywhere else (the uid leases under
# /run/lock, were the root writable) is in `podman diff`; a pod's scratch goes to its emptyDir.
POD_CHANGES = {"/etc", "/reports", "/submissions", "/tmp"}


def _unexpected_writes(changed: list[str]) -> list[str]:
    return [path for path in changed if path not in POD_CHANGES]


@pytest.fixture(scope="module")
def image() -> str:
    if why := images.unusable():
        pytest.skip(why)
    started = time.monotonic()
    images.ensure_base()
    base_s = time.monotonic() - started
    build_s = images.build_image()
    _record(
        base_image_bytes=images.image_size(images.BASE),
        base_seconds=round(base_s, 1),
        image_bytes=images.image_size(),
        image_build_seconds=round(build_s, 1),
    )
    return images.IMAGE


@pytest.fixture
def scratch() -> Iterator[Path]:
    """A folder the pod's root can reach (pytest's own are 0700 root's, which uid 100000 cannot enter)."""
    folder = Path(tempfile.mkdtemp(prefix="grader-pods-", dir="/tmp"))
    folder.chmod(0o755)
    try:
        yield folder
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def _reports_volume(folder: Path) -> Path:
    folder.mkdir()
    os.chown(folder, pod.POD_ROOT, pod.POD_ROOT)  # as an id-mapped volume shows it to the pod's root
    return folder


def _emit(round_dir: Path, job_file: Path, *extra: str) -> dict[str, Any]:
    done = run_grader(
        "grade-many",
        round_dir,
        "--emit-k8s-job",
        job_file,
        "--image",
        "registry.example/grader:0.1.0",
        "--job-name",
        "round-pods",
        *extra,
    )
    assert done.returncode == 0, done.stderr
    job: dict[str, Any] = yaml.safe_load(job_file.read_text())
    return job


def _run_pods(job: dict[str, Any], image: str, submissions: Path, reports: Path) -> list[pod.Ran]:
    claims = dict(zip(CLAIMS, (submissions, reports), strict=True))
    ran = []
    for index in range(job["spec"]["completions"]):
        result = pod.run(
            pod.pod_for(job, index=index, image=image, claims=claims, scratch=reports.parent), timeout_s=900
        )
        assert result.exit_code == 0, f"pod {index}: {result.stdout[-2000:]}{result.stderr[-3000:]}"
        for path, (_, limit) in result.pod.empty_dirs.items():  # past it the kubelet would have evicted the pod
            assert result.empty_dir_peaks[path] < limit, (path, result.empty_dir_peaks[path], limit)
        ran.append(result)
    return ran


def _report(folder: Path) -> dict[str, Any]:
    report: dict[str, Any] = json.loads((folder / "report.json").read_text())
    return report


def test_the_image_holds_the_kit_and_bubblewrap_and_no_submissions(image: str) -> None:
    files = images.image_files(image)
    present = set(files)
    for path in expect.IMAGE_PATHS:
        assert path in present, f"{path} is not in the image"
    kit = {path.split("/")[1] for path in files if path.startswith("kit/") and path.count("/") >= 1}
    assert kit <= expect.KIT_TOP, kit
    chaff = {p.name for p in (ROOT / "submissions" / "chaff").iterdir()}
    leaked = [
        path
        for path in files
        if path.startswith(expect.NEVER)
        or "submissions/reference" in path
        or "frameworks_submission" in path
        or set(path.split("/")) & chaff
    ]
    assert leaked == [], leaked[:20]
    # Every module of the kit has its bytecode in the image, checked by hash alone: on the read-only
    # image a pod could not write it, and would compile the grader again in every process.
    done = subprocess.run(
        [
            "podman",
            "run",
            "--rm",
            *images.host_flags(),
            "--pull",
            "never",
            "--entrypoint",
            "python",
            image,
            "-c",
            _UNCOMPILED,
        ],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0 and done.stdout.startswith("modules "), done.stderr
    modules, *uncompiled = done.stdout.split()[1:]
    assert int(modules) > 100 and uncompiled == [], uncompiled[:20]
    _record(image_files=len(files))


# Run inside the image: how many modules the kit has, then each one without unchecked-hash bytecode
# (the flags word of a .pyc: bit 0 hash-based, bit 1 checked against the source).
_UNCOMPILED = """
import importlib.util, pathlib
sources = [*pathlib.Path('/kit/grader').rglob('*.py'), *pathlib.Path('/kit/fake_server').rglob('*.py')]
missing = []
for source in sources:
    pyc = pathlib.Path(importlib.util.cache_from_source(str(source)))
    if not pyc.is_file() or int.from_bytes(pyc.read_bytes()[4:8], 'little') != 1:
        missing.append(str(source))
print('modules', len(sources), *missing)
"""


def _round(folder: Path) -> Path:
    folder.mkdir()
    ignore = shutil.ignore_patterns("__pycache__", ".pytest_cache")
    shutil.copytree(ROOT / "submissions" / "reference", folder / "reference", ignore=ignore)
    # one archive, as most returns come: unpacked into the pod's /tmp, the emptyDir (the image is read-only)
    frameworks = folder / "frameworks-unpacked"
    shutil.copytree(ROOT / "tests" / "fixtures" / "frameworks_submission", frameworks, ignore=ignore)
    shutil.make_archive(str(folder / "frameworks"), "zip", root_dir=frameworks)
    shutil.rmtree(frameworks)
    for name in CHAFF:
        materialize(ROOT / "submissions" / "chaff" / name, folder / name)
    subprocess.run(["chmod", "-R", "o+rX", str(folder)], check=True, timeout=60)
    return folder


# six pods one at a time (about 2 minutes each) and the same round graded locally: past the suite's 20-minute limit
@pytest.mark.timeout(3600)
def test_the_jobs_pods_grade_a_round_as_a_local_grade_many_does(image: str, scratch: Path) -> None:
    round_dir = _round(scratch / "round")
    job = _emit(round_dir, scratch / "job.yaml", "--parallelism", "3")
    assert job["spec"]["completions"] == 6 and job["spec"]["parallelism"] == 3
    reports = _reports_volume(scratch / "reports")
    ran = _run_pods(job, image, round_dir, reports)
    # Pod i graded what `grade-many ROUND --index i` grades: the two ways to name a round agree.
    chosen = [pick(pod_entries([round_dir]), i).name for i in range(len(ran))]
    assert [r.stdout.split(":")[0] for r in ran] == chosen, [r.stdout for r in ran]
    assert all(": graded " in r.stdout for r in ran), [r.stdout for r in ran]
    assert {r.pod.name: _unexpected_writes(r.changed) for r in ran} == {r.pod.name: [] for r in ran}

    merged = scratch / "merged"
    done = run_grader("grade-many", "--merge", reports, "--out", merged)
    assert done.returncode == 0, done.stderr
    local = scratch / "local"
    started = time.monotonic()
    # one exam: the local round is graded at the seed the Job gives every pod (a round draws its own otherwise)
    done = run_grader(
        "grade-many", round_dir, "--out", local, "--jobs", "1", "--seed", expect.job_seed(job), timeout=1800
    )
    local_s = time.monotonic() - started
    assert done.returncode == 0, done.stderr
    from_pods, from_here = (merged / "grades.csv").read_text(), (local / "grades.csv").read_text()
    assert from_pods == from_here, f"from the pods:\n{from_pods}\nfrom this machine:\n{from_here}"
    rows = list(csv.DictReader(io.StringIO(from_pods)))
    assert sorted(r["name"] for r in rows) == sorted(chosen) and all(r["sandboxed"] == "yes" for r in rows), rows

    lines = {}
    for name in chosen:
        kit = _report(merged / name)["extra_data"]["kit"]
        line = kit["sandbox_note"]
        assert kit["sandboxed"] is True and [words for words in POD_LINE if words not in line] == [], line
        assert "by cgroup" not in line, line  # no cgroup can be written in the pod: rlimits hold, and it says so
        lines[name] = line
        assert "by cgroup v1" in _report(local / name)["extra_data"]["kit"]["sandbox_note"]  # and here they do
    _record(
        pods={r.pod.name: {"graded": r.stdout.strip(), "seconds": round(r.seconds, 1)} for r in ran},
        pod_seconds_mean=round(sum(r.seconds for r in ran) / len(ran), 1),
        local_round_seconds=round(local_s, 1),
        local_seconds_per_grade=round(local_s / len(chosen), 1),
        grades_csv=from_pods,
        sandbox_lines=lines,
        pod_filesystem_changes=sorted({p for r in ran for p in r.changed}),
        scratch_peak_bytes={r.stdout.split(":")[0]: r.empty_dir_peaks["/tmp"] for r in ran},
    )


def _hostile_round(folder: Path, ids: list[str], marks: dict[str, str]) -> Path:
    """Hostile submissions of one part; their targets are the pod's paths (the kit, the volumes, the venv)."""
    folder.mkdir()
    secrets = {
        "read": ["/kit/grader/rubric/rubric.yaml", "/kit/grader/hidden/sizing_sets.yaml", "/reports"],
        "write": [
            "/kit/hostile-was-here",
            "/submissions/hostile-was-here",
            "/reports/hostile-was-here",
            "/opt/grader/hostile-was-here",
            "/root/hostile-was-here",
        ],
    }
    for case_id in ids:
        case = BY_ID[case_id]
        submission, marker = make_submission(folder, case.behaviour, part=case.part, args=case.args, secrets=secrets)
        marks[submission.name] = case_id
        assert submission.name == marker
    subprocess.run(["chmod", "-R", "o+rX", str(folder)], check=True, timeout=60)
    return folder


def test_the_hostile_programs_are_contained_inside_the_pod(image: str, scratch: Path) -> None:
    marks: dict[str, str] = {}
    seen: dict[str, Any] = {}
    for part in ("gateway", "loadgen"):
        ids = [case_id for case_id in HOSTILE if BY_ID[case_id].part == part]
        round_dir = _hostile_round(scratch / f"hostile-{part}", ids, marks)
        job = _emit(round_dir, scratch / f"job-{part}.yaml", "--only", ONLY[part])
        reports = _reports_volume(scratch / f"reports-{part}")
        for ran in _run_pods(job, image, round_dir, reports):
            name = ran.stdout.split(":")[0]
            case = BY_ID[marks[name]]
            assert processes_with(name) == [], f"{case.id}: a process outlived its pod"
            written = _unexpected_writes(ran.changed)
            assert written == [], f"{case.id}: the pod changed its own filesystem: {written}"
            report = _report(reports / name)
            kit = report["extra_data"]["kit"]
            line = kit["sandbox_note"]
            assert kit["sandboxed"] is True and [w for w in POD_LINE if w not in line] == [], line
            result = next(c for c in kit["criteria"] if c["id"] == ONLY[part])
            assert result["status"] == "failed" and result["score"] == 0, result["output"]
            logs = result.get("evidence", {}).get("logs", "")
            if case.reason_by_rlimit:  # RLIMIT_AS holds memory in the pod: the allocation fails
                assert case.reason_by_rlimit in logs or "the command hung" in result["output"], result["output"]
            else:
                assert any(why in result["output"] for why in case.reason.split("|")), result["output"]
            found = None
            if case.check is not None:
                found = findings(result)
                case.check(found)
            seen[case.id] = {
                "output": result["output"].splitlines()[0],
                "findings": found,
                "pod_seconds": round(ran.seconds, 1),
            }
        assert not list(reports.glob("**/hostile-was-here")) and not list(round_dir.glob("**/hostile-was-here"))
    assert sorted(seen) == sorted(HOSTILE)
    _record(hostile=seen)
