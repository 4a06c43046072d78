"""`grader grade-many --emit-k8s-job FILE`: the round as a Kubernetes Indexed Job.

    from grader.round.k8s_job import JobSpec, job_manifest, write_job
    text = write_job(JobSpec(names=["alice.zip", "bob"], image="grader:1.0"), Path("job.yaml"))

One index per submission (completions = N, completionMode: Indexed). Pod i runs
`grader grade-many /submissions/<every name> --index i --out /reports`, so it grades the i-th
submission into `/reports/<name>/`; the list is in the Job itself, so every pod agrees on which
index is which whatever else lies on the volume. Two volumes are PersistentVolumeClaims: the
submissions read-only, the reports shared by every pod (ReadWriteMany). `grader grade-many
--merge` gathers the report folders into one ranking afterwards (docs/grading-many.md). The
image's own filesystem is read-only: what a grade writes beside its reports (an archive unpacked)
goes to the third, an emptyDir at /tmp.

Unprivileged by default: the pod runs in a user namespace of its own (`hostUsers: false`, its root
an unprivileged uid on the node), not privileged, with no_new_privs, the RuntimeDefault seccomp
profile, and every capability dropped but the few the sandbox needs (`CAPABILITIES`, each with
why); they are capabilities over the pod's own namespaces, not the node. `privileged=True` is the
explicit trade-off for clusters without user namespaces; `runtime_class` names a RuntimeClass
(gVisor, Kata) that runs the pod in a sandbox of its own. docs/grading-many.md says more.

The file written is checked against the kit's own offline schemas (schemas/, strict) before it
is kept: an invalid Job is an error here, not at `kubectl apply`.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

__all__ = [
    "CAPABILITIES",
    "REPORTS_MOUNT",
    "SCRATCH_LIMIT",
    "SCRATCH_MOUNT",
    "SUBMISSIONS_MOUNT",
    "JobError",
    "JobSpec",
    "check_job",
    "job_manifest",
    "write_job",
]

SUBMISSIONS_MOUNT = "/submissions"
REPORTS_MOUNT = "/reports"
SCRATCH_MOUNT = "/tmp"
# The scratch volume's bound: an unpacked archive is at most 100 MiB (grader.grading.archive), and
# every sandbox's own disk is a tmpfs of its own, counted in the pod's memory, not here.
SCRATCH_LIMIT = "1Gi"
_DNS_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$")
_DNS_SUBDOMAIN = re.compile(r"^(?=.{1,253}$)[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")
_INDEX_ANNOTATION = "metadata.annotations['batch.kubernetes.io/job-completion-index']"

# The only capabilities an unprivileged pod keeps, and why the sandbox needs each (all others are
# dropped). Held as root of the pod's user namespace, they reach the pod's own namespaces and the
# files it owns, not the node. Without SYS_ADMIN the RuntimeDefault seccomp profile also refuses
# unshare and mount. SETPCAP is not kept: the candidate's bounding set then stays as the pod's,
# which gives it nothing (its permitted and effective sets are empty and no_new_privs is set).
CAPABILITIES = {
    "SYS_ADMIN": "bubblewrap makes the sandbox's namespaces and mounts its filesystem view, /proc and tmpfs",
    "NET_ADMIN": "bubblewrap brings up the loopback interface of the sandbox's own network namespace",
    "SETUID": "the candidate's commands run as an unprivileged uid, apart from the harness (setpriv)",
    "SETGID": "and as its gid, with no supplementary groups",
    "CHOWN": "the submission's copy, HOME and TMPDIR are given to the candidate's uid",
    "DAC_OVERRIDE": "the harness writes the grader's files (a gateway's config) into the candidate's work folder "
    "and reads back the files the candidate leaves there",
    "KILL": "the harness, root, ends the candidate's processes at a deadline or the output cap",
}


class JobError(ValueError):
    """A Job that cannot be written: a bad name, no submissions, or one the schemas reject."""


@dataclass(frozen=True)
class JobSpec:
    names: Sequence[str]  # each submission's file or folder name at the top of the submissions volume
    image: str
    parallelism: int = 4
    job_name: str = "grade-round"
    submissions_claim: str = "grader-submissions"
    reports_claim: str = "grader-reports"
    seed: int = 0
    only: tuple[str, ...] = ()
    privileged: bool = False  # the trade-off for clusters without user namespaces (docs/grading-many.md)
    runtime_class: str | None = None  # a RuntimeClass such as gVisor's or Kata's, if the cluster offers one


def _check_spec(spec: JobSpec) -> None:
    if not spec.names:
        raise JobError("no submissions: the Job needs at least one index")
    for field_name in ("job_name", "submissions_claim", "reports_claim"):
        value = getattr(spec, field_name)
        if not _DNS_LABEL.match(value):
            raise JobError(
                f"{field_name.replace('_', '-')} {value!r}: must be a DNS label "
                "(lower-case letters, digits and '-', at most 63)"
            )
    if spec.parallelism < 1:
        raise JobError(f"parallelism {spec.parallelism}: must be at least 1")
    if spec.runtime_class is not None and not _DNS_SUBDOMAIN.match(spec.runtime_class):
        raise JobError(
            f"runtime-class {spec.runtime_class!r}: must be a RuntimeClass name "
            "(lower-case letters, digits, '-' and '.', at most 253)"
        )
    for name in spec.names:
        if not name or "/" in name or name in (".", ".."):
            raise JobError(f"submission name {name!r}: must be one file or folder name on the submissions volume")


def job_manifest(spec: JobSpec) -> dict[str, Any]:
    """The Job as data (batch/v1)."""
    _check_spec(spec)
    labels = {"app.kubernetes.io/name": "grader", "app.kubernetes.io/instance": spec.job_name}
    args = ["grade-many", "--out", REPORTS_MOUNT, "--index", "$(JOB_COMPLETION_INDEX)", "--seed", str(spec.seed)]
    for part in spec.only:
        args += ["--only", part]
    args += ["--", *(f"{SUBMISSIONS_MOUNT}/{name}" for name in spec.names)]
    # Privileged or not, the image is read-only: its bytecode is compiled in, its scratch is SCRATCH_MOUNT.
    security: dict[str, Any] = (
        {"privileged": True, "readOnlyRootFilesystem": True}
        if spec.privileged
        else {
            "privileged": False,
            "allowPrivilegeEscalation": False,  # no_new_privs
            "readOnlyRootFilesystem": True,
            "capabilities": {"drop": ["ALL"], "add": list(CAPABILITIES)},
            "seccompProfile": {"type": "RuntimeDefault"},
        }
    )
    container = {
        "name": "grader",
        "image": spec.image,
        "args": args,
        # Declared (the Job controller also sets it) so that $(JOB_COMPLETION_INDEX) in args expands.
        "env": [{"name": "JOB_COMPLETION_INDEX", "valueFrom": {"fieldRef": {"fieldPath": _INDEX_ANNOTATION}}}],
        # The timed criteria were calibrated on two cores; a CPU limit would throttle them.
        "resources": {"requests": {"cpu": "2", "memory": "4Gi"}, "limits": {"memory": "4Gi"}},
        "securityContext": security,
        "volumeMounts": [
            {"name": "submissions", "mountPath": SUBMISSIONS_MOUNT, "readOnly": True},
            {"name": "reports", "mountPath": REPORTS_MOUNT},
            {"name": "scratch", "mountPath": SCRATCH_MOUNT},
        ],
    }
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": spec.job_name, "labels": labels},
        "spec": {
            "completionMode": "Indexed",
            "completions": len(spec.names),
            "parallelism": min(spec.parallelism, len(spec.names)),
            "backoffLimitPerIndex": 1,  # a pod lost with its node grades again; a finished grade is kept
            "template": {
                "metadata": {"labels": dict(labels)},
                "spec": {
                    **({} if spec.privileged else {"hostUsers": False}),
                    **({"runtimeClassName": spec.runtime_class} if spec.runtime_class else {}),
                    "restartPolicy": "Never",
                    "activeDeadlineSeconds": 3600,
                    "containers": [container],
                    "volumes": [
                        {
                            "name": "submissions",
                            "persistentVolumeClaim": {"claimName": spec.submissions_claim, "readOnly": True},
                        },
                        {"name": "reports", "persistentVolumeClaim": {"claimName": spec.reports_claim}},
                        {"name": "scratch", "emptyDir": {"sizeLimit": SCRATCH_LIMIT}},
                    ],
                },
            },
        },
    }


def _header(spec: JobSpec) -> str:
    return "\n".join(
        [
            f"# grader grade-many as a Kubernetes Indexed Job: {len(spec.names)} submissions, one index each.",
            f"# Before applying: copy every submission named in args to the top of PVC {spec.submissions_claim}",
            f"# (mounted at {SUBMISSIONS_MOUNT}); PVC {spec.reports_claim} (ReadWriteMany) collects /reports/<name>/.",
            "# After: grader grade-many --merge <copy of the reports volume> --out DIR (docs/grading-many.md).",
            f"# The image is mounted read-only; a grade's scratch (an archive unpacked): an emptyDir at {SCRATCH_MOUNT}.",
            *(
                [
                    "# PRIVILEGED, as chosen: the pod is root on its node, one bubblewrap escape away from the",
                    "# candidate's code (docs/grading-many.md weighs the trade-off).",
                ]
                if spec.privileged
                else [
                    "# Unprivileged: the pod's own user namespace (hostUsers: false; nodes must support it), no_new_privs,",
                    f"# RuntimeDefault seccomp, and only {', '.join(CAPABILITIES)} (why each: docs/grading-many.md).",
                ]
            ),
            *(
                [f"# RuntimeClass {spec.runtime_class}: the pod runs in that runtime's own sandbox."]
                if spec.runtime_class
                else []
            ),
            "",
        ]
    )


def check_job(path: Path) -> list[str]:
    """Problems the kit's offline checker finds in the Job file (empty when it validates strictly)."""
    from grader.manifests import check_manifests

    report = check_manifests([path])
    problems = []
    for check in report.checks:  # reading and strict validation; the serving checklist is for a model server
        if check.id != "schema-valid" and not check.id.startswith("yaml"):
            continue
        problems += [f"{f.where or path}: {f.message}" for f in check.findings if not f.passed]
    schema = next((c for c in report.checks if c.id == "schema-valid"), None)
    if schema is None or not schema.passed:
        problems = problems or [f"{path}: the strict schema check did not pass"]
    return problems


def write_job(spec: JobSpec, path: Path) -> str:
    """Write the Job to `path`, check it offline against the kit's schemas, and return its text."""
    text = _header(spec) + yaml.safe_dump(job_manifest(spec), sort_keys=False, width=1000)
    path.write_text(text, encoding="utf-8")
    problems = check_job(path)
    if problems:
        raise JobError("the emitted Job does not validate: " + "; ".join(problems))
    return text
