"""Manifests criteria come from the checker's own results, one rubric line per checklist item."""

from __future__ import annotations

import json
from pathlib import Path

from grader_cli import run_grader
from kit_paths import ROOT

from grader.kit.chaff import materialize
from grader.manifests import CHECKLIST
from grader.rubric import load_rubric


def test_every_checklist_item_is_a_rubric_line() -> None:
    ids = {c.id for c in load_rubric().criteria if c.deliverable == "manifests"}
    assert {f"manifests.{c.id}" for c in CHECKLIST} | {"manifests.schema-valid"} == ids


def test_a_literal_token_loses_only_its_line(tmp_path: Path) -> None:
    chaff = materialize(ROOT / "submissions" / "chaff" / "manifests-literal-hf-token", tmp_path / "chaff")
    done = run_grader("grade", "--seed", "0", chaff, "--out", tmp_path / "out", "--only", "manifests", timeout=300)
    assert done.returncode == 0, done.stderr
    tests = {t["name"].split(":")[0]: t for t in json.loads((tmp_path / "out" / "report.json").read_text())["tests"]}
    lost = sorted(k for k, t in tests.items() if t["extra_data"]["status"] != "passed")  # points or not
    assert lost == ["manifests.hf-token-secret"]
    assert "Hugging Face token is committed" in tests["manifests.hf-token-secret"]["output"]
