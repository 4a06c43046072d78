"""What the pod test (`make test-image`, 25 minutes, on demand) assumes of the image, checked on every run against
what the image is built from: the Containerfile, the repository's files it copies and the kit's console scripts
(tests/pods/expect.py states each assumption once). The Job's seed and the merged grades.csv are checked where the
Job's pods are run here without a cluster (tests/rooms/round/test_k8s_job.py)."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

import expect

ROOT = Path(__file__).resolve().parents[2]
CONTAINERFILE = (ROOT / "Containerfile").read_text()


def _stages() -> list[str]:
    return re.split(r"^FROM ", CONTAINERFILE, flags=re.MULTILINE)[1:]


def _kit_copies() -> list[str]:
    """What the install stage copies from the build context into /kit (the wheels go to /tmp/wheels)."""
    install = _stages()[0]
    assert "WORKDIR /kit" in install
    copied: list[str] = []
    for line in install.splitlines():
        if line.startswith("COPY ") and not line.startswith("COPY --from="):
            *sources, dest = line.split()[1:]
            if dest != "/tmp/wheels/":
                copied += sources
    return copied


def test_the_image_the_pod_test_expects_is_what_the_containerfile_copies() -> None:
    copied = _kit_copies()
    top = {source.rstrip("/").split("/")[0] for source in copied}
    # the editable install adds its metadata beside them, and nothing else lands in /kit
    assert top | {"serving_takehome_kit.egg-info"} == expect.KIT_TOP, top
    for path in expect.IMAGE_PATHS:
        if path.startswith("kit/"):
            inside = path.removeprefix("kit/")
            assert inside.split("/")[0] in top and (ROOT / inside).exists(), f"{path}: not in what /kit copies"
    # never copied: what is not the kit; and the final image takes only the venv and /kit from the install stage
    assert not any(f"kit/{source.rstrip('/')}".startswith(expect.NEVER) for source in copied), copied
    final = _stages()[-1]
    assert re.findall(r"^COPY --from=install (\S+)", final, re.MULTILINE) == ["/opt/grader", "/kit"]
    assert "/tmp/wheels" not in final


def test_the_grader_command_and_bubblewrap_the_pod_test_expects_are_installed() -> None:
    install, final = _stages()[0], _stages()[-1]
    assert "python3 -m venv /opt/grader" in install and "opt/grader/bin/grader" in expect.IMAGE_PATHS
    scripts = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["scripts"]
    assert scripts["grader"].split(":")[0] == "grader.cli", scripts  # the package the image's /kit holds
    assert (ROOT / "grader" / "cli" / "__init__.py").is_file()
    assert "usr/bin/bwrap" in expect.IMAGE_PATHS and re.search(r"apt-get install .*\bbubblewrap\b", final)


def test_the_jobs_seed_is_read_from_its_arguments() -> None:
    job = {"spec": {"template": {"spec": {"containers": [{"args": ["grade-many", "--seed", "41", "/submissions/a"]}]}}}}
    assert expect.job_seed(job) == 41 and expect.job_submissions(job) == ["a"]
    job["spec"]["template"]["spec"]["containers"][0]["args"] = ["grade-many", "/submissions/a"]
    try:
        expect.job_seed(job)
    except AssertionError as exc:
        assert "no --seed" in str(exc)
    else:
        raise AssertionError("a Job without --seed was read as having one")


#: What the pod test and the image are made of: a change to any of them since the last real run is untested
#: (this file's checks run in every `make test`, so they are not among them).
POD_SOURCES = (
    "tests/pods/test_pods.py",
    "tests/pods/pod.py",
    "tests/pods/images.py",
    "tests/pods/expect.py",
    "Containerfile",
)


def test_the_last_pod_run_passed_on_the_pod_test_and_image_as_they_stand() -> None:
    """`make test-image` is opt-in, so its last result (bench/results/pods.json) is held here: every pod test
    passed, and neither the pod test nor the Containerfile changed since the commit it ran on. After such a change,
    run `make test-image` again and commit its result."""
    import json
    import subprocess

    from pod_results import RESULTS

    last = json.loads(RESULTS.read_text())
    assert last["outcomes"] and set(last["outcomes"].values()) == {"passed"}, f"the last pod run: {last['outcomes']}"
    commit = last["commit"]
    assert "+" not in commit, f"the last pod run was of an uncommitted tree ({commit}): run make test-image again"
    known = subprocess.run(["git", "cat-file", "-t", commit], cwd=ROOT, capture_output=True, text=True, check=False)
    if known.returncode != 0:  # a checkout without the history (a shallow clone): nothing to compare with
        return
    changed = subprocess.run(
        ["git", "diff", "--name-only", commit, "--", *POD_SOURCES],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
    ).stdout.split()
    changed = [path for path in changed if "__pycache__" not in path]
    assert not changed, f"changed since the last pod run ({commit}, {last['date']}): {changed}; run make test-image"
