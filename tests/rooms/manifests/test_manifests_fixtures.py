"""Each defect fixture fails exactly the check it targets, and says where.

A fixture states its expectation in its header comments, so adding a defect is adding a file:
    # expect-fail: <check id>          (or "none")
    # expect-path: <text in the failing finding's field path>
    # expect-message: <text in its message>
    # expect-where: <text in its file:line>
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from kit_paths import TESTS

from grader.manifests import CHECKLIST, check_manifests

FIXTURES = TESTS / "fixtures" / "manifests"
ALL_FIXTURES = sorted(FIXTURES.glob("*.yaml"))
DEFECTS = [p for p in ALL_FIXTURES if p.name != "good.yaml"]


def expectations(path: Path) -> dict[str, str]:
    header = re.findall(r"^# expect-([a-z]+): (.+)$", path.read_text(), flags=re.MULTILINE)
    return dict(header)


def test_every_fixture_states_what_it_expects() -> None:
    assert len(DEFECTS) >= 20
    for path in ALL_FIXTURES:
        assert "fail" in expectations(path), f"{path.name} has no '# expect-fail:' line"


def test_good_manifests_pass_every_check() -> None:
    report = check_manifests([FIXTURES / "good.yaml"])
    assert report.failed_ids == []
    assert report.exit_code == 0
    assert [c.id for c in report.checks] == ["yaml-parse", "schema-valid", *(c.id for c in CHECKLIST)]


@pytest.mark.parametrize("path", DEFECTS, ids=lambda p: p.stem)
def test_defect_fails_exactly_its_check(path: Path) -> None:
    expected = expectations(path)
    report = check_manifests([path])
    assert report.failed_ids == [expected["fail"]]
    assert report.exit_code == 1
    failures = report.check(expected["fail"]).failures
    assert failures, "a failed check must say why"
    assert all(f.fix for f in failures), "every failure carries a fix"
    if "path" in expected:
        assert any(f.path and expected["path"] in f.path for f in failures), [f.path for f in failures]
    if "message" in expected:
        assert any(expected["message"] in f.message for f in failures), [f.message for f in failures]
    if "where" in expected:
        assert any(expected["where"] in f.where for f in failures), [f.where for f in failures]


def test_each_checklist_item_has_a_defect_fixture() -> None:
    targeted = {expectations(p)["fail"] for p in DEFECTS}
    assert {c.id for c in CHECKLIST} | {"schema-valid", "yaml-parse"} <= targeted


def test_allowed_kind_passes_without_a_schema() -> None:
    report = check_manifests([FIXTURES / "unknown-kind.yaml"], allow_kinds=["ServiceMonitor"])
    assert report.passed
    allowed = [f for f in report.check("schema-valid").findings if f.resource == "ServiceMonitor/llama"]
    assert allowed and "allowed by --allow-kind" in allowed[0].message


def test_broken_yaml_keeps_the_documents_before_the_error() -> None:
    report = check_manifests([FIXTURES / "broken-yaml.yaml"])
    assert [d.kind for d in report.documents][:2] == ["PersistentVolumeClaim", "Deployment"]
    assert report.check("gpu-request").passed


def test_a_folder_is_read_recursively(tmp_path: Path) -> None:
    docs = (FIXTURES / "good.yaml").read_text().split("\n---\n")
    (tmp_path / "sub").mkdir()
    for i, doc in enumerate(docs):
        (tmp_path / ("sub" if i % 2 else ".") / f"{i:02d}.yml").write_text(doc)
    (tmp_path / "notes.txt").write_text("not yaml: [")
    report = check_manifests([tmp_path])
    assert report.passed
    assert len(report.documents) == len(docs)
