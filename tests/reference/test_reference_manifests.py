"""The reference manifests pass every checklist item, as a values file and as rendered YAML, and stay in step.

Both forms go through `grader manifests` on the command line, as the grader runs it on a submission.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import yaml
from kit_paths import ROOT

from grader.manifests import CHECKLIST

MANIFESTS = ROOT / "submissions" / "reference" / "manifests"
GRADER = Path(sys.executable).parent / "grader"


def check(*args: str) -> dict[str, Any]:
    done = subprocess.run(
        [str(GRADER), "manifests", *args, "--format", "json"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode in (0, 1), done.stderr
    report: dict[str, Any] = json.loads(done.stdout)
    return report


def assert_every_check_passes(report: dict[str, Any]) -> None:
    failed = {
        c["id"]: [f["message"] for f in c["findings"] if not f["passed"]] for c in report["checks"] if not c["passed"]
    }
    assert failed == {}
    assert report["passed"] is True
    assert {c.id for c in CHECKLIST} <= {c["id"] for c in report["checks"]}


def test_values_file_passes_every_check_in_chart_mode() -> None:
    report = check("chart", "--values", str(MANIFESTS / "values.yaml"))
    assert_every_check_passes(report)
    assert "render" in {c["id"] for c in report["checks"]}


def test_rendered_folder_passes_every_check() -> None:
    report = check(str(MANIFESTS / "rendered"))
    assert_every_check_passes(report)
    kinds = {d["kind"] for d in report["documents"]}
    assert kinds == {"Deployment", "Service", "PodDisruptionBudget", "PersistentVolumeClaim", "ScaledObject"}


def render(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "render.py", *args], cwd=MANIFESTS, capture_output=True, text=True, timeout=120, check=False
    )


def test_rendered_folder_is_what_the_values_render_to() -> None:
    done = render("--check")
    assert done.returncode == 0, done.stderr


def test_a_stale_render_is_caught(tmp_path: Path) -> None:
    values = yaml.safe_load((MANIFESTS / "values.yaml").read_text())
    values["model"]["maxModelLen"] = 16384
    changed = tmp_path / "values.yaml"
    changed.write_text(yaml.safe_dump(values))
    done = render("--check", "--values", str(changed))
    assert done.returncode == 1 and "stale" in done.stderr


def test_rendered_file_says_how_it_was_made() -> None:
    [rendered] = (MANIFESTS / "rendered").glob("*.yaml")
    head = rendered.read_text().splitlines()[:4]
    assert any("python render.py" in line for line in head) and any("values.yaml" in line for line in head)


def test_the_replica_is_one_80gb_gpu_serving_the_workload_context() -> None:
    docs = list(yaml.safe_load_all((MANIFESTS / "rendered" / "vllm.yaml").read_text()))
    deployment = next(d for d in docs if d["kind"] == "Deployment")
    server = deployment["spec"]["template"]["spec"]["containers"][0]
    args = server["args"]
    assert server["resources"]["limits"]["nvidia.com/gpu"] == "1"
    assert args[args.index("--max-model-len") + 1] == "8192"
    assert args[args.index("--gpu-memory-utilization") + 1] == "0.92"
    assert "80GB" in deployment["spec"]["template"]["spec"]["nodeSelector"]["nvidia.com/gpu.product"]
    scaled = next(d for d in docs if d["kind"] == "ScaledObject")
    assert scaled["spec"]["minReplicaCount"] == 2  # the memo's floor of two replicas
