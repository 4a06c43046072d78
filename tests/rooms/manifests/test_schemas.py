"""The committed schemas: fresh, standalone, strict, small, in kubeconform's layout; the CRDs hold."""

from __future__ import annotations

import copy
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from grader.kit import schemas_build
from grader.manifests.schema_store import (
    SchemaStore,
    builtin_dir_name,
    builtin_file_name,
    crd_file_name,
    default_schemas_dir,
)

SCHEMAS = default_schemas_dir()
BUILTIN = SCHEMAS / builtin_dir_name()


def _walk(node: Any) -> Iterator[Any]:
    """Every subschema, except the conditions of `if` (they test fields, they do not declare them)."""
    yield node
    if isinstance(node, dict):
        for key, value in node.items():
            if key != "if":
                yield from _walk(value)
    elif isinstance(node, list):
        for value in node:
            yield from _walk(value)


def test_committed_schemas_match_a_fresh_build() -> None:
    assert schemas_build.check(SCHEMAS) == []


def test_build_writes_both_kubeconform_names_for_every_kind(tmp_path: Path) -> None:
    written = {p.name for p in schemas_build.build(tmp_path)}
    for api_version, kind in schemas_build.KINDS:
        assert builtin_file_name(api_version, kind) in written
        assert f"{kind.lower()}.json" in written
    assert (BUILTIN / "deployment.json").read_bytes() == (BUILTIN / "deployment-apps-v1.json").read_bytes()


@pytest.mark.parametrize(
    ("api_version", "kind", "name"),
    [
        ("apps/v1", "Deployment", "deployment-apps-v1.json"),
        ("v1", "Service", "service-v1.json"),
        ("networking.k8s.io/v1", "Ingress", "ingress-networking-v1.json"),
        ("autoscaling/v2", "HorizontalPodAutoscaler", "horizontalpodautoscaler-autoscaling-v2.json"),
        ("keda.sh/v1alpha1", "ScaledObject", "scaledobject-keda-v1alpha1.json"),
    ],
)
def test_file_names_follow_kubeconform(api_version: str, kind: str, name: str) -> None:
    assert builtin_file_name(api_version, kind) == name


def test_crd_names_follow_the_crds_catalog_layout() -> None:
    assert crd_file_name("keda.sh/v1alpha1", "ScaledObject") == "keda.sh/scaledobject_v1alpha1.json"
    assert (SCHEMAS / "crds" / crd_file_name("inference.networking.k8s.io/v1", "InferencePool")).is_file()


def test_schemas_are_standalone_strict_and_small() -> None:
    files = sorted(BUILTIN.glob("*.json")) + sorted((SCHEMAS / "crds").rglob("*.json"))
    total = sum(p.stat().st_size for p in files)
    assert total < 1.5e6, f"{total} bytes"
    for path in files:
        assert path.stat().st_size < 2 * 2**20, path.name
        schema = json.loads(path.read_text())
        if path.parent != BUILTIN or path.name == "deployment-apps-v1.json":  # the meta-check takes ~0.3 s a file
            jsonschema.validators.validator_for(schema).check_schema(schema)
        for node in _walk(schema):
            if isinstance(node, dict):
                ref = node.get("$ref")
                assert ref is None or ref.startswith("#/"), f"{path.name} refers outside itself: {ref}"
                if "properties" in node:
                    assert node.get("additionalProperties") is False, f"{path.name} has an open object"


def _scaled_object(threshold: Any) -> dict[str, Any]:
    return {
        "apiVersion": "keda.sh/v1alpha1",
        "kind": "ScaledObject",
        "metadata": {"name": "vllm"},
        "spec": {
            "scaleTargetRef": {"name": "vllm"},
            "minReplicaCount": 1,
            "maxReplicaCount": 2,
            "triggers": [
                {
                    "type": "prometheus",
                    "metadata": {
                        "serverAddress": "http://prometheus:9090",
                        "query": "sum(vllm:num_requests_waiting)",
                        "threshold": threshold,
                    },
                }
            ],
        },
    }


def _errors(doc: dict[str, Any]) -> list[str]:
    validator = SchemaStore().validator(doc["apiVersion"], doc["kind"])
    assert validator is not None
    return [f"{list(e.absolute_path)} {e.message}" for e in validator.iter_errors(doc)]


def test_scaledobject_threshold_must_be_a_string() -> None:
    assert _errors(_scaled_object("5")) == []
    errors = _errors(_scaled_object(5))
    assert errors == ["['spec', 'triggers', 0, 'metadata', 'threshold'] 5 is not of type 'string'"]


def test_scaledobject_rejects_unknown_fields() -> None:
    doc = _scaled_object("5")
    doc["spec"]["cooldownPeriods"] = 300
    assert any("cooldownPeriods" in e for e in _errors(doc))


INFERENCE_POOL: dict[str, Any] = {
    "apiVersion": "inference.networking.k8s.io/v1",
    "kind": "InferencePool",
    "metadata": {"name": "vllm-pool"},
    "spec": {
        "selector": {"matchLabels": {"app": "vllm"}},
        "targetPorts": [{"number": 8000}],
        "endpointPickerRef": {"name": "vllm-epp", "port": {"number": 9002}, "failureMode": "FailClose"},
    },
}


def test_inference_pool_v1_accepts_the_published_shape() -> None:
    assert _errors(INFERENCE_POOL) == []


@pytest.mark.parametrize(
    ("change", "field"),
    [
        (lambda s: s["endpointPickerRef"].pop("port"), "port"),  # required when kind is (default) Service
        (lambda s: s["targetPorts"].append({"number": 8001}), "targetPorts"),  # at most one port
        (lambda s: s.update(selector={"matchLabels": {}}), "matchLabels"),
        (lambda s: s.update(targetPortNumber=8000), "targetPortNumber"),  # the pre-v1 field name
        (lambda s: s["endpointPickerRef"].update(failureMode="FailSafe"), "failureMode"),
    ],
    ids=["no-epp-port", "two-ports", "empty-selector", "v1alpha2-field", "bad-failure-mode"],
)
def test_inference_pool_v1_rejects(change: Any, field: str) -> None:
    doc = copy.deepcopy(INFERENCE_POOL)
    change(doc["spec"])
    errors = _errors(doc)
    assert errors and any(field in e for e in errors), errors


def test_inference_pool_epp_port_is_optional_for_other_kinds() -> None:
    doc = copy.deepcopy(INFERENCE_POOL)
    doc["spec"]["endpointPickerRef"] = {"group": "example.com", "kind": "Picker", "name": "epp"}
    assert _errors(doc) == []
