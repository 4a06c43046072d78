"""The vendored chart renders through Helm's SDK, lints clean, validates and passes the checklist."""

from __future__ import annotations

import json
import re
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import helm_python
import httpx
import jsonschema
import pytest
import yaml
from kit_paths import ROOT

from grader.manifests import check_manifests

CHART = ROOT / "chart"
FAKE_VALUES = CHART / "ci" / "fake-server-values.yaml"


def render(values: dict[str, Any] | None = None) -> dict[str, dict[str, Any]]:
    """Rendered documents by kind (the chart renders at most one of each)."""
    with helm_python.Chart.load(CHART) as chart:
        rendered = chart.render(values=values or {}, name="vllm", namespace="default")
    docs = [d for name, text in rendered.items() if name.endswith(".yaml") for d in yaml.safe_load_all(text) if d]
    return {d["kind"]: d for d in docs}


def server(docs: dict[str, dict[str, Any]]) -> dict[str, Any]:
    container: dict[str, Any] = docs["Deployment"]["spec"]["template"]["spec"]["containers"][0]
    return container


def test_default_values_render_the_documented_resources() -> None:
    docs = render()
    assert sorted(docs) == ["Deployment", "PersistentVolumeClaim", "PodDisruptionBudget", "Service"]
    args = server(docs)["args"]
    assert args[args.index("--max-model-len") + 1] == "8192"
    assert "--served-model-name" in args


@pytest.mark.parametrize(
    "values",
    [None, yaml.safe_load(FAKE_VALUES.read_text()), {"autoscaling": {"enabled": True}}],
    ids=["default", "fake-server", "autoscaling"],
)
def test_helm_lint_strict_is_clean(values: dict[str, Any] | None) -> None:
    report = helm_python.lint(CHART, values, strict=True)
    assert report["errors"] == [] and report["messages"] == []


def test_helm_lint_reports_what_the_values_schema_rejects() -> None:
    report = helm_python.lint(CHART, {"replica": 2}, strict=True)
    assert any("additional properties 'replica' not allowed" in e for e in report["errors"])


def test_default_values_pass_validation_and_every_check() -> None:
    report = check_manifests([CHART])
    assert report.failed_ids == []
    assert [d.kind for d in report.documents] == [
        "Deployment",
        "PodDisruptionBudget",
        "PersistentVolumeClaim",
        "Service",
    ]


def test_fake_server_values_fail_only_the_gpu_item_as_documented() -> None:
    report = check_manifests([CHART], values=FAKE_VALUES)
    assert report.failed_ids == ["gpu-request"]
    command = server(render(yaml.safe_load(FAKE_VALUES.read_text())))["command"]
    assert command == ["fake-server", "serve"]


def test_pdb_and_service_select_exactly_the_deployment_pods() -> None:
    docs = render()
    selector = docs["Deployment"]["spec"]["selector"]["matchLabels"]
    pod_labels = docs["Deployment"]["spec"]["template"]["metadata"]["labels"]
    assert selector.items() <= pod_labels.items()
    assert docs["PodDisruptionBudget"]["spec"]["selector"]["matchLabels"] == selector
    assert docs["Service"]["spec"]["selector"] == selector


def test_autoscaling_renders_a_valid_scaledobject_with_string_metadata(tmp_path: Path) -> None:
    values = {"autoscaling": {"enabled": True, "threshold": 7, "activationThreshold": 2}}
    docs = render(values)
    so = docs["ScaledObject"]
    assert "replicas" not in docs["Deployment"]["spec"], "KEDA owns the replica count"
    metadata = so["spec"]["triggers"][0]["metadata"]
    assert metadata["threshold"] == "7" and metadata["activationThreshold"] == "2"
    assert metadata["query"] == 'sum(vllm:num_requests_waiting{model_name="qwen2.5-7b-instruct"})'
    assert (
        so["spec"]["advanced"]["horizontalPodAutoscalerConfig"]["behavior"]["scaleDown"]["stabilizationWindowSeconds"]
        == 600
    )
    values_file = tmp_path / "values.yaml"
    values_file.write_text(yaml.safe_dump(values))
    assert check_manifests([CHART], values=values_file).passed


def test_large_numbers_are_rendered_as_integers() -> None:
    args = server(render({"model": {"maxModelLen": 1_000_000}}))["args"]
    assert args[args.index("--max-model-len") + 1] == "1000000"


def test_pdb_max_unavailable_replaces_min_available() -> None:
    spec = render({"pdb": {"minAvailable": None, "maxUnavailable": "50%"}})["PodDisruptionBudget"]["spec"]
    assert spec["maxUnavailable"] == "50%" and "minAvailable" not in spec


def test_existing_claim_is_used_instead_of_creating_one() -> None:
    docs = render({"modelVolume": {"existingClaim": "weights-prefilled"}})
    assert "PersistentVolumeClaim" not in docs
    volumes = docs["Deployment"]["spec"]["template"]["spec"]["volumes"]
    assert {"name": "models", "persistentVolumeClaim": {"claimName": "weights-prefilled"}} in volumes


@pytest.mark.parametrize(
    ("values", "helm_says", "path", "line"),
    [
        ({"replicas": 2}, "at '': additional properties 'replicas' not allowed", "replicas", 1),
        ({"image": {"tag": 0.11}}, "at '/image/tag': got number, want string", "image.tag", 2),
        ({"model": {"maxModelLen": "8k"}}, "at '/model/maxModelLen': got string, want integer", "model.maxModelLen", 2),
        (
            {
                "probes": {
                    "startup": {"periodSeconds": 10, "failureThreshold": 60, "timeoutSeconds": 5, "initialDelay": 30}
                }
            },
            "at '/probes/startup': additional properties 'initialDelay' not allowed",
            "probes.startup.initialDelay",
            4,
        ),
    ],
    ids=["unknown-top-level-key", "numeric-image-tag", "string-max-model-len", "unknown-nested-key"],
)
def test_values_schema_rejects_with_the_key_path(
    values: dict[str, Any], helm_says: str, path: str, line: int, tmp_path: Path
) -> None:
    with helm_python.Chart.load(CHART) as chart, pytest.raises(helm_python.HelmValuesError) as raised:
        chart.render(values=values, name="vllm")
    assert helm_says in str(raised.value)
    values_file = tmp_path / "values.yaml"
    values_file.write_text(yaml.safe_dump(values))
    [failure] = check_manifests([CHART], values=values_file).check("render").failures
    assert (failure.path, failure.line, failure.file) == (path, line, str(values_file))
    assert helm_says.split(": ", 1)[1] in failure.message


def _objects(schema: Any, where: str = "") -> Iterator[tuple[str, dict[str, Any]]]:
    if isinstance(schema, dict):
        if schema.get("type") == "object" or "properties" in schema:
            yield where, schema
        for key, value in schema.items():
            yield from _objects(value, f"{where}/{key}")
    elif isinstance(schema, list):
        for i, value in enumerate(schema):
            yield from _objects(value, f"{where}/{i}")


def test_values_schema_is_closed_and_typed_everywhere() -> None:
    schema = json.loads((CHART / "values.schema.json").read_text())
    jsonschema.Draft7Validator.check_schema(schema)
    jsonschema.Draft7Validator(schema).validate(yaml.safe_load((CHART / "values.yaml").read_text()))
    for where, node in _objects(schema):
        assert "additionalProperties" in node, f"{where} accepts unknown keys"
        assert node["additionalProperties"] is False or "type" in node["additionalProperties"], where


def test_every_value_is_commented() -> None:
    lines = (CHART / "values.yaml").read_text().splitlines()
    for i, line in enumerate(lines):
        if not re.match(r"^\s*[A-Za-z][\w.]*:", line):
            continue
        leaf = not re.match(r"^\s*[A-Za-z][\w.]*:\s*$", line)
        if leaf:
            assert lines[i - 1].strip().startswith("# --"), f"values.yaml:{i + 1} {line.strip()!r} has no comment"


def test_fake_server_values_start_the_real_fake_server() -> None:
    """The command line the chart renders for engine fake-server is accepted and serves the model."""
    container = server(render(yaml.safe_load(FAKE_VALUES.read_text())))
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    args = list(container["args"])
    args[args.index("--port") + 1] = str(port)
    process = subprocess.Popen(
        [sys.executable, "-m", "fake_server", *container["command"][1:], *args],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    try:
        deadline = time.monotonic() + 20
        while True:
            try:
                if httpx.get(f"http://127.0.0.1:{port}/health", timeout=1).status_code == 200:
                    break
            except httpx.TransportError:
                pass
            assert process.poll() is None, process.stderr.read().decode() if process.stderr else ""
            assert time.monotonic() < deadline, "the fake server did not become healthy"
            time.sleep(0.05)
        models = httpx.get(f"http://127.0.0.1:{port}/v1/models", timeout=5).json()["data"]
        assert [(m["id"], m["max_model_len"]) for m in models] == [("fake-model", 8192)]
    finally:
        process.terminate()
        process.wait(timeout=10)
