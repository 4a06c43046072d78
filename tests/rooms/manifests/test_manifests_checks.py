"""Checklist rules beyond the fixtures: one edit to the good manifests, one expected outcome."""

from __future__ import annotations

import base64
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml
from kit_paths import TESTS

from grader.manifests import CHECKLIST, check_manifests

GOOD = TESTS / "fixtures" / "manifests" / "good.yaml"
Docs = dict[str, dict[str, Any]]


def _container(docs: Docs) -> dict[str, Any]:
    container: dict[str, Any] = docs["Deployment"]["spec"]["template"]["spec"]["containers"][0]
    return container


def _args(docs: Docs, *extra: str) -> None:
    _container(docs)["args"].extend(extra)


def _to_statefulset(docs: Docs) -> None:
    sts = docs.pop("Deployment")
    sts["kind"] = "StatefulSet"
    sts["spec"].pop("strategy")
    sts["spec"]["serviceName"] = "llama"
    sts["spec"]["template"]["spec"]["volumes"] = [
        v for v in sts["spec"]["template"]["spec"]["volumes"] if v["name"] != "weights"
    ]
    sts["spec"]["volumeClaimTemplates"] = [
        {
            "metadata": {"name": "weights"},
            "spec": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "100Gi"}}},
        }
    ]
    docs["StatefulSet"] = sts


def _secret_with_token(docs: Docs) -> None:
    token = base64.b64encode(b"hf_" + b"a1B2" * 9).decode()
    docs["Secret"] = {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {"name": "hf-secret", "namespace": "serving"},
        "data": {"HF_TOKEN": token},
    }


# each change edits the documents in place (what a lambda returns is ignored)
CASES: list[tuple[str, Callable[[Docs], object], str | None, str]] = [
    (
        "gpu-request-differs",
        lambda d: _container(d)["resources"]["requests"].update({"nvidia.com/gpu": 2}),
        "gpu-request",
        "differs from the limit",
    ),
    (
        "gpu-request-without-limit",
        lambda d: _container(d)["resources"]["limits"].pop("nvidia.com/gpu"),
        "gpu-request",
        "requested but not limited",
    ),
    (
        "mig-profile",
        lambda d: [
            _container(d)["resources"][k].update({"nvidia.com/mig-3g.40gb": 1})
            or _container(d)["resources"][k].pop("nvidia.com/gpu")
            for k in ("requests", "limits")
        ],
        None,
        "nvidia.com/mig-3g.40gb",
    ),
    (
        "memory-request-above-limit",
        lambda d: _container(d)["resources"]["requests"].update(memory="64Gi"),
        "memory-limit",
        "exceeds the limit 40Gi",
    ),
    (
        "probe-path-404",
        lambda d: _container(d)["readinessProbe"]["httpGet"].update(path="/healthz"),
        "readiness-probe",
        "GET /healthz",
    ),
    (
        "probe-unknown-port-name",
        lambda d: _container(d)["readinessProbe"]["httpGet"].update(port="api"),
        "readiness-probe",
        "no container port is named",
    ),
    (
        "startup-initial-delay-counts",
        lambda d: _container(d)["startupProbe"].update(initialDelaySeconds=300, periodSeconds=10, failureThreshold=30),
        None,
        "allows 600 s",
    ),
    (
        "pdb-empty-selector",
        lambda d: d["PodDisruptionBudget"]["spec"].update(selector={}),
        "pdb-selects-pods",
        "empty selector",
    ),
    (
        "pdb-other-namespace",
        lambda d: d["PodDisruptionBudget"]["metadata"].update(namespace="default"),
        "pdb-selects-pods",
        "no PodDisruptionBudget in namespace serving",
    ),
    (
        "pdb-match-expressions",
        lambda d: d["PodDisruptionBudget"]["spec"].update(
            selector={"matchExpressions": [{"key": "tier", "operator": "In", "values": ["inference"]}]}
        ),
        None,
        "selects the pods of Deployment/llama",
    ),
    (
        "weights-read-only",
        lambda d: _container(d)["volumeMounts"][0].update(readOnly=True),
        "model-volume",
        "mounted readOnly",
    ),
    (
        "weights-default-cache",
        lambda d: _container(d)["args"].__delitem__(slice(6, 8)),
        "model-volume",
        "/root/.cache/huggingface",
    ),
    (
        "weights-hf-home",
        lambda d: [
            _container(d)["args"].__delitem__(slice(6, 8)),
            _container(d)["env"].append({"name": "HF_HOME", "value": "/weights/hf"}),
        ],
        None,
        "weights at /weights/hf (HF_HOME)",
    ),
    ("statefulset-claim-template", _to_statefulset, None, "volumeClaimTemplate 'weights'"),
    (
        "token-optional",
        lambda d: _container(d)["env"][0]["valueFrom"]["secretKeyRef"].update(optional=True),
        "hf-token-secret",
        "optional",
    ),
    (
        "token-from-configmap",
        lambda d: _container(d)["env"][0].update(valueFrom={"configMapKeyRef": {"name": "cfg", "key": "HF_TOKEN"}}),
        "hf-token-secret",
        "ConfigMap",
    ),
    ("token-committed-in-secret", _secret_with_token, "hf-token-secret", "committed"),
    (
        "chunked-prefill-off",
        lambda d: _args(d, "--max-num-batched-tokens", "4096", "--no-enable-chunked-prefill"),
        "max-model-len",
        "refuses to start",
    ),
    ("max-model-len-auto", lambda d: _container(d)["args"].__setitem__(5, "auto"), "max-model-len", "'auto'"),
    (
        "context-length-env",
        lambda d: _container(d)["env"].append({"name": "LOCAL_MAX_MODEL_LEN", "value": "8192"}),
        "max-model-len",
        "states a context length of 8192",
    ),
]


@pytest.mark.parametrize(("name", "edit", "fails", "text"), CASES, ids=[c[0] for c in CASES])
def test_one_edit(name: str, edit: Callable[[Docs], object], fails: str | None, text: str, tmp_path: Path) -> None:
    docs: Docs = {d["kind"]: d for d in yaml.safe_load_all(GOOD.read_text())}
    edit(docs)
    path = tmp_path / f"{name}.yaml"
    path.write_text(yaml.safe_dump_all(docs.values(), sort_keys=False))
    report = check_manifests([path])
    assert report.failed_ids == ([fails] if fails else [])
    findings = report.check(fails).failures if fails else [f for c in report.checks for f in c.findings]
    assert any(text in f.message for f in findings), [f.message for f in findings]


def test_without_a_server_every_item_fails_and_says_why(tmp_path: Path) -> None:
    path = tmp_path / "web.yaml"
    path.write_text(
        "apiVersion: v1\nkind: Pod\nmetadata: {name: web}\nspec:\n  containers:\n  - {name: web, image: nginx}\n"
    )
    report = check_manifests([path])
    assert report.failed_ids == [c.id for c in CHECKLIST]
    assert all("no serving container found" in report.check(c.id).findings[0].message for c in CHECKLIST)
