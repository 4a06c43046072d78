"""What the pod test (test_pods.py, `make test-image`) expects of the image and of the Job, stated once.

The pod test runs for 25 minutes and only on demand, so what it assumes is held here and checked on every
`make test` too (test_what_the_pods_assume.py), against what the image is built from: the Containerfile, the
repository's files it copies and the wheel's console scripts. A change to the kit's layout or to how a round
names its seed then breaks a test every run, not only the pod test the next time someone runs it.
"""

from __future__ import annotations

from typing import Any

#: Paths the image must hold (no leading slash): the kit's code and data, bubblewrap, the `grader` command.
IMAGE_PATHS = (
    "kit/grader/cli/__init__.py",
    "kit/grader/rubric/rubric.yaml",
    "kit/fake_server",
    "kit/starter/api_client.py",
    "kit/chart/Chart.yaml",
    "kit/schemas",
    "usr/bin/bwrap",
    "opt/grader/bin/grader",
)
#: All the image's /kit may hold at its top: the Containerfile's copies and the editable install's metadata.
KIT_TOP = {
    "pyproject.toml",
    "setup.py",
    "MANIFEST.in",
    "README.md",
    "fake_server",
    "grader",
    "starter",
    "chart",
    "schemas",
    "serving_takehome_kit.egg-info",
}
#: What must never be in the image: what is not the kit, and the wheels it was installed from.
NEVER = ("kit/submissions", "kit/tests", "kit/bench", "kit/docs", "tmp/wheels")


def job_seed(job: dict[str, Any]) -> int:
    """The seed every pod of the Job grades at: `--seed N` in its container's arguments."""
    args = job["spec"]["template"]["spec"]["containers"][0]["args"]
    if "--seed" not in args:
        raise AssertionError(f"the Job's pods are given no --seed: {args}")
    return int(args[args.index("--seed") + 1])


def job_submissions(job: dict[str, Any]) -> list[str]:
    """The submissions the Job's pods grade, in index order (its container's last arguments)."""
    args = job["spec"]["template"]["spec"]["containers"][0]["args"]
    return [a.removeprefix("/submissions/") for a in args if a.startswith("/submissions/")]
