"""One pod of the emitted Indexed Job, run by podman with the pod template's own settings.

    pod = pod_for(job, index=2, image=IMAGE, claims={"grader-submissions": subs, "grader-reports": reports},
                  scratch=folder_for_its_empty_dirs)
    ran = run(pod, timeout_s=900)

Every field of the Job's pod template is mapped below, or refused: a field added to the Job that
is not in FIELDS fails here until it is mapped, so what runs is the template, not a guess at it.

| pod template field                               | what podman is given                                          |
| ------------------------------------------------ | ------------------------------------------------------------- |
| `hostUsers: false`                               | `--uidmap 0:100000:65536 --gidmap 0:100000:65536`: a user      |
|                                                  | namespace of 65,536 ids, its root an unprivileged uid here    |
| `restartPolicy: Never`                           | no `--restart`                                                |
| `activeDeadlineSeconds`                          | the wait for the container, at most this (the test's own      |
|                                                  | bound may be shorter); the container is killed past it        |
| `containers[0].name`                             | `--name <job>-<index>` (a pod's name holds its index)         |
| `containers[0].image`                            | the image built here (the Job names the team's registry)      |
| `containers[0].args`                             | after the image, `$(JOB_COMPLETION_INDEX)` expanded as the     |
|                                                  | kubelet expands it; the image's ENTRYPOINT is `grader`        |
| `containers[0].env` (JOB_COMPLETION_INDEX from   | `--env JOB_COMPLETION_INDEX=<index>` (the Job controller's      |
| the index annotation)                            | annotation on pod <index>)                                    |
| `resources.limits.memory`                        | `--memory`                                                    |
| `resources.requests.cpu`                         | `--cpu-shares` 1024 a CPU, as the kubelet sets it; no CPU limit |
| `resources.requests.memory`                      | `--memory-reservation`                                        |
| `securityContext.privileged: false`              | no `--privileged`                                             |
| `securityContext.allowPrivilegeEscalation: false`| `--security-opt no-new-privileges`                            |
| `securityContext.readOnlyRootFilesystem: true`   | `--read-only --read-only-tmpfs=false` (podman would otherwise |
|                                                  | mount writable tmpfs on /tmp, /var/tmp and /run); /dev/shm    |
|                                                  | stays a writable tmpfs, as in a pod, under podman 4.3 (4.7 on |
|                                                  | makes it read-only too: the uid leases would go to /tmp)      |
| `securityContext.capabilities` drop ALL, add ... | `--cap-drop all --cap-add <each>`                             |
| `securityContext.seccompProfile: RuntimeDefault` | `--security-opt seccomp=<the runtime's default profile>`      |
|                                                  | (containers-common's, Docker's profile as containerd's is)    |
| `volumeMounts[].readOnly: true`                  | `--volume <claim's folder>:<mountPath>:ro`                     |
| `volumeMounts[]` (read-write)                    | `--volume <claim's folder>:<mountPath>`, the folder the pod     |
|                                                  | root's, as an id-mapped volume shows it to the pod            |
| `volumes[].persistentVolumeClaim`                | the claim's folder here (`claims`)                            |
| `volumes[].emptyDir`                             | `--volume <a new folder, mode 0777 and the pod root's, as the |
|                                                  | kubelet makes it>:<mountPath>`, removed after the pod; its    |
|                                                  | files' sizes read every 2 s while it runs, against sizeLimit  |

What a runtime adds that Kubernetes asks for too: /proc masked (`procMount: Default`), /sys and
the cgroup mounts read-only for an unprivileged container, and a network namespace of the pod's own
with an interface and a default route (podman's default bridge, as a CNI plugin gives a pod), so
that what the sandbox hides from a candidate is there to hide. The host's own settings
(`images.host_flags`: runc, rlimits runc can set) are not the pod's.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from images import host_flags

POLL_S = 2.0  # how often an emptyDir's usage is read while its pod runs
POD_ROOT = 100000  # the host uid of the pod's root: 65,536 ids from here
SECCOMP_DEFAULT = Path("/usr/share/containers/seccomp.json")
INDEX_VAR = "$(JOB_COMPLETION_INDEX)"
INDEX_ANNOTATION = "metadata.annotations['batch.kubernetes.io/job-completion-index']"
FIELDS = {
    "pod": {"hostUsers", "restartPolicy", "activeDeadlineSeconds", "containers", "volumes"},
    "container": {"name", "image", "args", "env", "resources", "securityContext", "volumeMounts"},
    "securityContext": {
        "privileged",
        "allowPrivilegeEscalation",
        "readOnlyRootFilesystem",
        "capabilities",
        "seccompProfile",
    },
}


@dataclass(frozen=True)
class Pod:
    name: str
    argv: list[str]  # the podman run command
    deadline_s: float  # activeDeadlineSeconds
    empty_dirs: dict[str, tuple[Path, int]]  # mountPath -> (its folder here, its sizeLimit in bytes)


@dataclass(frozen=True)
class Ran:
    pod: Pod
    exit_code: int
    stdout: str
    stderr: str
    seconds: float
    changed: list[str]  # `podman diff`: every path the pod added, changed or deleted in its own filesystem
    empty_dir_peaks: dict[str, int]  # mountPath -> the most bytes its emptyDir held when polled


def _refuse_unmapped(what: str, data: dict[str, Any]) -> None:
    unknown = sorted(set(data) - FIELDS[what])
    assert not unknown, f"the Job's {what} has fields this emulation does not map: {unknown}"


def pod_for(job: dict[str, Any], *, index: int, image: str, claims: dict[str, Path], scratch: Path) -> Pod:
    """The `podman run` of pod `index` of the Job `job` (as loaded from the emitted file). Each of its
    emptyDir volumes is made afresh here, a new folder under `scratch` (one of a previous run is wiped)."""
    spec = job["spec"]
    assert spec["completionMode"] == "Indexed" and 0 <= index < spec["completions"], (index, spec["completions"])
    template = spec["template"]["spec"]
    _refuse_unmapped("pod", template)
    assert template["hostUsers"] is False, "this emulation runs the unprivileged pod (hostUsers: false)"
    assert template["restartPolicy"] == "Never"
    (container,) = template["containers"]
    _refuse_unmapped("container", container)
    name = f"{job['metadata']['name']}-{index}"
    argv = ["podman", "run", *host_flags(), "--pull", "never", "--name", name]
    argv += ["--uidmap", f"0:{POD_ROOT}:65536", "--gidmap", f"0:{POD_ROOT}:65536"]

    security = container["securityContext"]
    _refuse_unmapped("securityContext", security)
    assert security["privileged"] is False
    if security["allowPrivilegeEscalation"] is False:
        argv += ["--security-opt", "no-new-privileges"]
    if security["readOnlyRootFilesystem"] is True:
        argv += ["--read-only", "--read-only-tmpfs=false"]
    caps = security["capabilities"]
    assert caps["drop"] == ["ALL"], caps
    argv += ["--cap-drop", "all", *(f"--cap-add={cap}" for cap in caps["add"])]
    assert security["seccompProfile"] == {"type": "RuntimeDefault"}, security["seccompProfile"]
    argv += ["--security-opt", f"seccomp={SECCOMP_DEFAULT}"]

    resources = container["resources"]
    argv += [
        "--memory",
        str(_bytes(resources["limits"]["memory"])),
        "--memory-reservation",
        str(_bytes(resources["requests"]["memory"])),
    ]
    argv += ["--cpu-shares", str(int(float(resources["requests"]["cpu"]) * 1024))]
    assert "cpu" not in resources["limits"], "a CPU limit would throttle the timed criteria"

    for env in container["env"]:
        assert env == {"name": "JOB_COMPLETION_INDEX", "valueFrom": {"fieldRef": {"fieldPath": INDEX_ANNOTATION}}}
        argv += ["--env", f"JOB_COMPLETION_INDEX={index}"]

    by_volume = {v["name"]: v for v in template["volumes"]}
    empty_dirs: dict[str, tuple[Path, int]] = {}
    for mount in container["volumeMounts"]:
        volume = by_volume[mount["name"]]
        if "emptyDir" in volume:
            assert set(volume) == {"name", "emptyDir"} and set(volume["emptyDir"]) <= {"sizeLimit"}, volume
            folder = scratch / f"{name}-{mount['name']}"
            shutil.rmtree(folder, ignore_errors=True)
            folder.mkdir(parents=True)
            folder.chmod(0o777)
            os.chown(folder, POD_ROOT, POD_ROOT)  # the pod's root owns an emptyDir, as it does a volume
            empty_dirs[mount["mountPath"]] = (folder, _bytes(volume["emptyDir"]["sizeLimit"]))
            argv += ["--volume", f"{folder}:{mount['mountPath']}"]
            continue
        assert set(volume) == {"name", "persistentVolumeClaim"}, volume
        claim = volume["persistentVolumeClaim"]
        folder = claims[claim["claimName"]]
        read_only = mount.get("readOnly", False) or claim.get("readOnly", False)
        argv += ["--volume", f"{folder}:{mount['mountPath']}" + (":ro" if read_only else "")]

    argv += [image, *(arg.replace(INDEX_VAR, str(index)) for arg in container["args"])]
    return Pod(name, argv, float(template["activeDeadlineSeconds"]), empty_dirs)


def _bytes(quantity: str) -> int:
    units = {"Ki": 1024, "Mi": 1024**2, "Gi": 1024**3}
    for suffix, factor in units.items():
        if quantity.endswith(suffix):
            return int(quantity[: -len(suffix)]) * factor
    return int(quantity)


def run(pod: Pod, *, timeout_s: float) -> Ran:
    """Run the pod to its end (killed past its deadline or `timeout_s`), read what it changed, remove it."""
    subprocess.run(["podman", "rm", "--force", pod.name], capture_output=True, timeout=120, check=False)
    started = time.monotonic()
    proc = subprocess.Popen(pod.argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = started + min(pod.deadline_s, timeout_s)
    peaks = dict.fromkeys(pod.empty_dirs, 0)
    while True:
        try:  # the kubelet, too, measures an emptyDir now and then, and evicts the pod past its sizeLimit
            stdout, stderr = proc.communicate(timeout=POLL_S)
            break
        except subprocess.TimeoutExpired:
            for path, (folder, _) in pod.empty_dirs.items():
                peaks[path] = max(peaks[path], _bytes_in(folder))
            if time.monotonic() < deadline:
                continue
            subprocess.run(["podman", "kill", pod.name], capture_output=True, timeout=120, check=False)
            proc.kill()
            stdout, stderr = proc.communicate()
            stderr += f"\nkilled: the pod ran past {min(pod.deadline_s, timeout_s):g} s"
            break
    seconds = time.monotonic() - started
    try:
        diff = subprocess.run(
            ["podman", "diff", "--format", "json", pod.name], capture_output=True, text=True, timeout=120, check=False
        )
        assert diff.returncode == 0, diff.stderr
        changed = sorted(path for paths in json.loads(diff.stdout or "{}").values() for path in paths or [])
    finally:
        subprocess.run(["podman", "rm", "--force", pod.name], capture_output=True, timeout=120, check=False)
    for folder, _ in pod.empty_dirs.values():
        shutil.rmtree(folder, ignore_errors=True)  # an emptyDir ends with its pod
    return Ran(pod, proc.returncode, stdout, stderr, seconds, changed, peaks)


def _bytes_in(folder: Path) -> int:
    """The bytes of every file under `folder` now (files come and go while it is read)."""
    total = 0
    for top, _, files in os.walk(folder):
        for name in files:
            try:
                total += os.lstat(os.path.join(top, name)).st_size
            except OSError:
                continue
    return total
