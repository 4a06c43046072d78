"""The checker's building blocks on small inputs: YAML positions, flags, selectors, quantities."""

from __future__ import annotations

import json
from decimal import Decimal

import pytest

from grader.manifests import ManifestReport
from grader.manifests.checks.disruption_budget import selector_matches
from grader.manifests.fieldpath import fmt_path
from grader.manifests.loader import load_text
from grader.manifests.quantity import parse_quantity
from grader.manifests.results import CheckResult, Finding
from grader.manifests.schema_store import SchemaStore
from grader.manifests.validate import validate_documents
from grader.manifests.workload import find_servers, parse_length


def test_loader_keeps_lines_duplicates_and_timestamps_as_strings() -> None:
    docs, problems = load_text(
        "# comment\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a\n"
        "  creationTimestamp: 2024-05-01T00:00:00Z\ndata:\n  x: '1'\n  x: '2'\n---\n---\n[1]\n",
        "f.yaml",
    )
    assert [d.ref for d in docs] == ["ConfigMap/a"]
    doc = docs[0]
    assert doc.line == 2 and doc.line_of(("metadata", "name")) == 5 and doc.line_of(("data", "x", "deep")) == 9
    assert doc.data["metadata"]["creationTimestamp"] == "2024-05-01T00:00:00Z"
    assert [(d.path, d.first_line, d.second_line) for d in doc.duplicates] == [(("data", "x"), 8, 9)]
    assert [(p.line, "not a mapping" in p.message) for p in problems] == [(12, True)]


def test_loader_reports_where_a_yaml_error_is() -> None:
    docs, problems = load_text("a: 1\n---\nb: [1, 2\nc: 3\n", "f.yaml")
    assert [d.data for d in docs] == [{"a": 1}]
    assert problems[0].file == "f.yaml" and problems[0].line == 4
    assert "started at line 3" in problems[0].message


def _server(container: str) -> str:
    return (
        "apiVersion: v1\nkind: Pod\nmetadata: {name: p, labels: {app: x}}\nspec:\n  containers:\n"
        "  - name: sidecar\n    image: envoyproxy/envoy\n" + container
    )


@pytest.mark.parametrize(
    "container",
    [
        "  - name: s\n    image: vllm/vllm-openai\n    args: [--max-model-len, '4096']\n",
        "  - name: s\n    image: vllm/vllm-openai\n    args: ['--max-model-len=4096']\n",
        "  - name: s\n    image: my/server\n    command: [vllm, serve, m]\n    args: [--max_model_len, '4k']\n",
        "  - name: s\n    image: my/server\n    command: [sh, -c, 'exec vllm serve m --max-model-len 4K']\n",
        (
            "  - name: s\n    image: my/server\n    command: [python3, -m, vllm.entrypoints.openai.api_server]\n"
            "    args: [--max-model-len, '4096']\n"
        ),
        "  - name: s\n    image: kit\n    command: [fake-server, serve, --max-model-len, '4096']\n",
    ],
    ids=["args", "equals", "underscore-and-k", "shell-script", "module", "fake-server"],
)
def test_the_server_and_its_flag_are_found_however_written(container: str) -> None:
    docs, _ = load_text(_server(container), "f.yaml")
    servers = find_servers(docs)
    assert [s.name for s in servers] == ["s"]
    values = [parse_length(v.value or "") for v in servers[0].flag("--max-model-len")]
    assert values in ([4096], [4000])


def test_positional_model_and_sidecars() -> None:
    docs, _ = load_text(
        _server("  - name: s\n    image: x\n    command: [vllm, serve, /models/m, --port, '9000']\n"), "f.yaml"
    )
    server = find_servers(docs)[0]
    model = server.positional_model()
    assert model is not None and model.value == "/models/m"
    assert server.flag("--port")[0].value == "9000" and server.flag("--port")[0].path == ("command", 4)


@pytest.mark.parametrize(
    ("text", "value"),
    [("8192", 8192), ("8k", 8000), ("8K", 8192), ("1.5k", 1500), ("auto", None), ("-1", None), ("0", None)],
)
def test_parse_length(text: str, value: int | None) -> None:
    assert parse_length(text) == value


@pytest.mark.parametrize(
    ("text", "value"),
    [
        ("32Gi", Decimal(32 * 2**30)),
        ("500m", Decimal("0.5")),
        ("1e3", Decimal(1000)),
        (4, Decimal(4)),
        ("4 Gi", None),
        ("Gi", None),
    ],
)
def test_parse_quantity(text: object, value: Decimal | None) -> None:
    assert parse_quantity(text) == value


def test_selector_semantics() -> None:
    labels = {"app": "vllm", "tier": "gpu"}
    assert selector_matches({"matchLabels": {"app": "vllm"}}, labels)
    assert not selector_matches({"matchLabels": {"app": "vllm", "zone": "a"}}, labels)
    assert selector_matches(
        {
            "matchExpressions": [
                {"key": "tier", "operator": "In", "values": ["gpu", "cpu"]},
                {"key": "canary", "operator": "DoesNotExist"},
            ]
        },
        labels,
    )
    assert not selector_matches({"matchExpressions": [{"key": "tier", "operator": "NotIn", "values": ["gpu"]}]}, labels)


def test_fmt_path() -> None:
    assert (
        fmt_path(("spec", "containers", 0, "resources", "limits", "nvidia.com/gpu"))
        == 'spec.containers[0].resources.limits["nvidia.com/gpu"]'
    )


def test_schema_messages_name_the_field() -> None:
    docs, _ = load_text(
        "apiVersion: v1\nkind: Service\nmetadata: {name: s}\nspec:\n  ports:\n"
        "  - targetPort: 80\n    nodePort: '30000'\n",
        "svc.yaml",
    )
    findings = validate_documents(docs, SchemaStore())
    messages = {(f.path, f.message) for f in findings}
    assert messages == {
        ("spec.ports[0].port", "required field 'port' is missing"),
        ("spec.ports[0].nodePort", "expected integer, got string '30000'"),
    }
    assert all(f.resource == "Service/s" and f.file == "svc.yaml" and f.fix for f in findings)
    assert {f.line for f in findings} == {6, 7}


def test_document_without_kind() -> None:
    docs, _ = load_text("metadata: {name: x}\n", "f.yaml")
    [finding] = validate_documents(docs, SchemaStore())
    assert not finding.passed and "no apiVersion or kind" in finding.message


def test_a_check_with_nothing_found_fails() -> None:
    assert not CheckResult("x", "X").passed
    assert CheckResult("x", "X", [Finding(True, "ok")]).passed


def test_gradescope_export_has_one_test_per_check() -> None:
    report = ManifestReport(
        "src",
        "1.37.0",
        checks=[
            CheckResult(
                "a", "A", [Finding(False, "bad", resource="Pod/p", path="spec", fix="do", file="f.yaml", line=3)]
            ),
            CheckResult("b", "B", [Finding(True, "fine")]),
        ],
    )
    tests = report.to_gradescope_tests()
    assert [(t["name"], t["status"], t["tags"]) for t in tests] == [
        ("a: A", "failed", ["manifests", "a"]),
        ("b: B", "passed", ["manifests", "b"]),
    ]
    assert tests[0]["output"] == "FAIL Pod/p spec: bad (f.yaml:3). Fix: do"


def test_report_exports_round_trip_through_json() -> None:
    report = ManifestReport("src", "1.37.0", checks=[CheckResult("a", "A", [Finding(False, "bad", fix="do")])])
    data = json.loads(report.to_json())
    assert data["summary"] == {"checks": 1, "passed": 0, "failed": ["a"]}
    assert data["checks"][0]["findings"][0]["fix"] == "do"
    assert report.exit_code == 1
