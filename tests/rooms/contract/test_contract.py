"""The contract's schemas, their examples, the starter's skeletons, and the messages for bad input."""

from __future__ import annotations

import json
import shutil
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import httpx
import pytest
import yaml
from click.testing import CliRunner
from kit_paths import ROOT

from grader.cli import main as grader_cli
from grader.contract import (
    KINDS,
    SCHEMA_DIR,
    ContractError,
    check_output,
    load_submission,
    memo_front_matter,
    schema_errors,
)

STARTER = ROOT / "starter"
EXAMPLES = SCHEMA_DIR / "examples"


def _example(kind: str) -> dict[str, Any]:
    """The schema's example of `kind`: every one is an object."""
    for suffix in (".json", ".yaml"):
        path = EXAMPLES / f"{kind}{suffix}"
        if path.exists():
            example: dict[str, Any] = (
                json.loads(path.read_text()) if suffix == ".json" else yaml.safe_load(path.read_text())
            )
            return example
    raise AssertionError(f"no example for {kind}")


@pytest.mark.parametrize("kind", KINDS)
def test_every_example_follows_its_schema(kind: str) -> None:
    assert schema_errors(kind, _example(kind)) == []


def test_schemas_catch_what_the_definitions_forbid() -> None:
    results = _example("loadgen-results")
    failed_with_ttft = json.loads(json.dumps(results))
    failed_with_ttft["requests"][2]["ttft_s"] = 0.5
    assert any("requests[2].ttft_s" in e for e in schema_errors("loadgen-results", failed_with_ttft))
    empty_with_tokens = json.loads(json.dumps(results))
    empty_with_tokens["requests"][1]["output_tokens"] = 3
    assert any("requests[1].output_tokens" in e for e in schema_errors("loadgen-results", empty_with_tokens))
    no_samples = json.loads(json.dumps(results))
    no_samples["summary"]["tps"] = {"n": 0, "p50": 1.0, "p90": None, "p99": None, "max": None, "p99_is_max": True}
    assert any("summary.tps.p50" in e for e in schema_errors("loadgen-results", no_samples))
    memo = _example("memo-front-matter")
    memo["figures"][1].pop("sample_size")
    assert any("sample_size" in e for e in schema_errors("memo-front-matter", memo))
    memo["figures"][0]["provenance"] = "vibes"
    assert any("figures[0].provenance" in e for e in schema_errors("memo-front-matter", memo))


def test_unknown_version_is_rejected_by_name() -> None:
    data = dict(_example("submission"), contract=5)
    assert schema_errors("submission", data) == [
        "contract: version 5 is not one this grader grades (it grades versions 1, 2, 3, 4)"
    ]
    for version in (1, 2, 3):  # every version the kit has issued is still graded
        assert schema_errors("submission", dict(_example("submission"), contract=version)) == []


def test_starter_submission_follows_the_contract() -> None:
    submission = load_submission(STARTER)
    assert submission.manifests == ("values", STARTER / "manifests" / "values.yaml")
    assert submission.command("gateway") == ["python", "gateway/gateway.py"]
    assert submission.percentile.file == STARTER / "loadgen" / "loadgen.py"


def _import_percentile(folder: Path, spec: str) -> subprocess.CompletedProcess[str]:
    """Import `module:function` as the contract says (submission folder as cwd, first on sys.path)
    in a fresh interpreter, and call it on a known list."""
    module, function = spec.split(":")
    code = (
        f"import sys; sys.path.insert(0, '.'); import importlib; f = getattr(importlib.import_module({module!r}), "
        f"{function!r}); print(repr(f([9.0, 1.0, 5.0, 3.0], 50)), repr(f([], 90)))"
    )
    return subprocess.run(
        [sys.executable, "-c", code], cwd=folder, capture_output=True, text=True, timeout=30, check=False
    )


def test_starter_percentile_is_a_marked_todo_the_grader_can_import() -> None:
    done = _import_percentile(STARTER, load_submission(STARTER).percentile.spec)
    assert done.returncode != 0 and "NotImplementedError: TODO: nearest-rank percentile" in done.stderr


def test_reference_percentile_follows_the_stated_signature() -> None:
    reference = ROOT / "submissions" / "reference"
    done = _import_percentile(reference, load_submission(reference).percentile.spec)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["3.0", "None"]  # sorted 1 3 5 9: rank ceil(0.5 * 4) = 2


@pytest.mark.parametrize(
    ("value", "message"),
    [
        (None, "'percentile' is a required property"),
        ("loadgen/loadgen.py:percentile", "loadgen.percentile: 'loadgen/loadgen.py:percentile' does not match"),
        ("loadgen.loadgen", "loadgen.percentile: 'loadgen.loadgen' does not match"),
        ("loadgen.stats:percentile", "loadgen.percentile: loadgen.stats:percentile: no module file loadgen/stats.py"),
        (
            "loadgen.loadgen:p99",
            "loadgen.percentile: loadgen.loadgen:p99: loadgen/loadgen.py defines no top-level 'p99'",
        ),
    ],
)
def test_percentile_field_is_checked_by_name(tmp_path: Path, value: str | None, message: str) -> None:
    folder = _copy_starter(tmp_path)
    data = yaml.safe_load((folder / "submission.yaml").read_text())
    if value is None:
        del data["loadgen"]["percentile"]
    else:
        data["loadgen"]["percentile"] = value
    (folder / "submission.yaml").write_text(yaml.safe_dump(data))
    with pytest.raises(ContractError) as caught:
        load_submission(folder)
    assert message in str(caught.value) and "submission.yaml" in str(caught.value)


def test_percentile_module_may_be_a_package_or_bind_the_name_by_import(tmp_path: Path) -> None:
    folder = _copy_starter(tmp_path)
    (folder / "stats").mkdir()
    (folder / "stats" / "__init__.py").write_text("from math import fsum as total\nfrom .rank import *\n")
    data = yaml.safe_load((folder / "submission.yaml").read_text())
    for spec in ("stats:total", "stats:anything_star_may_bind"):
        data["loadgen"]["percentile"] = spec
        (folder / "submission.yaml").write_text(yaml.safe_dump(data))
        assert load_submission(folder).percentile.file == folder / "stats" / "__init__.py"
    (folder / "stats" / "__init__.py").write_text("def broken(:\n")
    with pytest.raises(ContractError, match=r"stats/__init__.py: line 1 is not valid Python"):
        load_submission(folder)


def _copy_starter(tmp_path: Path) -> Path:
    folder = tmp_path / "sub"
    shutil.copytree(STARTER, folder)
    return folder


def test_submission_errors_name_the_file_field_and_line(tmp_path: Path) -> None:
    with pytest.raises(ContractError, match="no submission.yaml"):
        load_submission(tmp_path)
    folder = _copy_starter(tmp_path)
    (folder / "submission.yaml").write_text("contract: 1\nloadgen: [unclosed\n")
    with pytest.raises(ContractError, match=r"submission.yaml: line \d+: not valid YAML"):
        load_submission(folder)
    (folder / "submission.yaml").write_text(yaml.safe_dump(dict(_example("submission"), sizng={"command": ["x"]})))
    with pytest.raises(ContractError, match="Additional properties are not allowed \\('sizng' was unexpected\\)"):
        load_submission(folder)
    (folder / "submission.yaml").write_text(yaml.safe_dump(dict(_example("submission"), memo="memo/NOPE.md")))
    with pytest.raises(ContractError, match="memo: memo/NOPE.md does not exist"):
        load_submission(folder)
    (folder / "submission.yaml").write_text(yaml.safe_dump(dict(_example("submission"), memo="../../etc/passwd")))
    with pytest.raises(ContractError, match="memo"):
        load_submission(folder)


def test_memo_front_matter_is_read_and_errors_name_lines(tmp_path: Path) -> None:
    assert schema_errors("memo-front-matter", memo_front_matter(STARTER / "memo" / "MEMO.md")) == []
    bad = tmp_path / "MEMO.md"
    bad.write_text("# no front matter\n")
    with pytest.raises(ContractError, match="line 1: the memo must start with YAML front matter"):
        memo_front_matter(bad)
    bad.write_text("---\ncontract: 1\nfigures: [\n")
    with pytest.raises(ContractError, match="never closed"):
        memo_front_matter(bad)


def test_starter_loadgen_skeleton_runs_and_writes_a_valid_empty_result(tmp_path: Path) -> None:
    out = tmp_path / "results.json"
    subprocess.run(
        [
            sys.executable,
            "loadgen/loadgen.py",
            "--base-url",
            "http://127.0.0.1:9/v1",
            "--model",
            "m",
            "--requests",
            "4",
            "--concurrency",
            "2",
            "--prompt-tokens",
            "8",
            "--max-tokens",
            "8",
            "--output",
            str(out),
        ],
        cwd=STARTER,
        check=True,
        capture_output=True,
    )
    assert check_output("loadgen-results", out) == []
    assert json.loads(out.read_text())["summary"]["n"] == 0  # it sends nothing: the rubric will fail it


def test_starter_sizing_skeleton_runs_but_fails_the_contract() -> None:
    out = subprocess.run([sys.executable, "sizing/sizing.py"], cwd=STARTER, check=True, capture_output=True, text=True)
    assert schema_errors("sizing-output", json.loads(out.stdout))


def test_starter_gateway_skeleton_starts_and_routes_nothing(tmp_path: Path) -> None:
    config = tmp_path / "gateway.yaml"
    config.write_text((EXAMPLES / "gateway-config.yaml").read_text())
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    proc = subprocess.Popen(
        [sys.executable, "gateway/gateway.py", "--config", str(config), "--port", str(port)],
        cwd=STARTER,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        deadline = time.monotonic() + 15
        while True:
            try:
                assert httpx.get(f"http://127.0.0.1:{port}/health").status_code == 200
                break
            except httpx.TransportError:
                assert time.monotonic() < deadline and proc.poll() is None
                time.sleep(0.05)
        r = httpx.post(
            f"http://127.0.0.1:{port}/v1/chat/completions", json={"messages": [{"role": "user", "content": "x"}]}
        )
        assert r.status_code == 501
        assert schema_errors("gateway-stats", httpx.get(f"http://127.0.0.1:{port}/stats").json()) == []
    finally:
        proc.terminate()
        proc.wait(10)


def test_contract_command(tmp_path: Path) -> None:
    runner = CliRunner()
    ok = runner.invoke(grader_cli, ["contract", str(STARTER)])
    assert ok.exit_code == 0 and "follows contract 4" in ok.output
    folder = _copy_starter(tmp_path)
    (folder / "submission.yaml").write_text("contract: 5\n")
    bad = runner.invoke(grader_cli, ["contract", str(folder)])
    assert bad.exit_code == 1 and "version 5 is not one this grader grades" in bad.output
    results = tmp_path / "r.json"
    results.write_text('{"contract": 1}')
    partial = runner.invoke(grader_cli, ["contract", str(STARTER), "--output", "loadgen-results", str(results)])
    assert partial.exit_code == 1 and "'config' is a required property" in partial.output


def test_manifest_checker_json_follows_its_schema(tmp_path: Path) -> None:
    fixtures = ROOT / "tests" / "fixtures" / "manifests"
    for path in (fixtures / "good.yaml", fixtures / "broken-yaml.yaml", fixtures / "pdb-other-pods.yaml"):
        out = subprocess.run(
            [str(Path(sys.executable).parent / "grader"), "manifests", str(path), "--format", "json"],
            capture_output=True,
            text=True,
            check=False,
        )
        assert schema_errors("manifest-report", json.loads(out.stdout)) == [], path


def test_reference_submission_follows_the_contract() -> None:
    submission = load_submission(ROOT / "submissions" / "reference")
    assert submission.manifests[0] == "values"
    for part in ("loadgen", "gateway", "sizing"):
        assert submission.command(part)[0] == "python"
    assert submission.percentile.spec == "loadgen.percentiles:nearest_rank"


def test_bare_contract_check_validates_the_memo_front_matter(tmp_path: Path) -> None:
    from grader.contract import ContractError, load_submission

    folder = tmp_path / "sub"
    shutil.copytree(ROOT / "submissions" / "reference", folder, ignore=shutil.ignore_patterns("__pycache__"))
    memo = folder / "memo" / "MEMO.md"
    memo.write_text(memo.read_text().replace("provenance: invented sample", "provenance: a hunch", 1))
    with pytest.raises(ContractError, match="front matter: figures"):
        load_submission(folder)
