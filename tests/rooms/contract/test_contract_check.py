"""One contract check (`check_submission`), read by `grader contract`, `grader check` and the grade alike: each kind
of broken submission, the part it is charged to, whether the grade skips that part, and what a real grade and a
real `grader contract` then do with it."""

from __future__ import annotations

import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml
from click.testing import CliRunner
from kit_paths import ROOT

from grader.cli import main as grader_cli
from grader.contract import PARTS, check_submission
from grader.grading.grade import GradeRequest, grade

REFERENCE = ROOT / "submissions" / "reference"


def _reference(tmp_path: Path) -> Path:
    folder = tmp_path / "sub"
    shutil.copytree(REFERENCE, folder, ignore=shutil.ignore_patterns("__pycache__", ".pytest_cache"))
    return folder


def _edit_yaml(folder: Path, change: Callable[[dict[str, Any]], object]) -> None:
    data = yaml.safe_load((folder / "submission.yaml").read_text())
    change(data)
    (folder / "submission.yaml").write_text(yaml.safe_dump(data))


def _no_file(folder: Path) -> None:
    (folder / "submission.yaml").unlink()


def _not_yaml(folder: Path) -> None:
    (folder / "submission.yaml").write_text("loadgen: [unclosed\n")


def _unknown_version(folder: Path) -> None:
    _edit_yaml(folder, lambda d: d.update(contract=99))


def _gateway_schema(folder: Path) -> None:
    _edit_yaml(folder, lambda d: d["gateway"].update(command="python gateway/gateway.py"))  # a string, not argv


def _sizing_missing(folder: Path) -> None:
    _edit_yaml(folder, lambda d: d.pop("sizing"))


def _memo_missing(folder: Path) -> None:
    (folder / "memo" / "MEMO.md").unlink()


def _front_matter(folder: Path) -> None:
    memo = folder / "memo" / "MEMO.md"
    memo.write_text(memo.read_text().replace("contract: 4", "contract: four", 1))


def _manifests_missing(folder: Path) -> None:
    (folder / "manifests" / "values.yaml").unlink()


def _percentile_unknown(folder: Path) -> None:
    _edit_yaml(folder, lambda d: d["loadgen"].update(percentile="loadgen.percentiles:no_such_function"))


def _script_missing(folder: Path) -> None:
    (folder / "sizing" / "sizing.py").unlink()


#: (what is broken, the part it is charged to, whether the grade skips that part)
CASES: list[tuple[Callable[[Path], None], str, bool]] = [
    (_no_file, "*", True),
    (_not_yaml, "*", True),
    (_unknown_version, "*", True),
    (_gateway_schema, "gateway", True),
    (_sizing_missing, "sizing", True),
    (_memo_missing, "memo", True),
    (_front_matter, "memo", False),
    (_manifests_missing, "manifests", False),
    (_percentile_unknown, "loadgen", False),
    (_script_missing, "sizing", False),
]


def test_the_reference_has_no_problem() -> None:
    check = check_submission(REFERENCE)
    assert check.problems == () and check.loaded().folder == REFERENCE


@pytest.mark.parametrize(("breaking", "part", "skips"), CASES, ids=[c[0].__name__.strip("_") for c in CASES])
def test_each_broken_part_is_charged_to_its_part_and_skips_it_or_not_as_stated(
    tmp_path: Path, breaking: Callable[[Path], None], part: str, skips: bool
) -> None:
    folder = _reference(tmp_path)
    breaking(folder)
    check = check_submission(folder)
    assert {p.part for p in check.problems} == {part}, check.problems
    assert all(p.skips == skips for p in check.problems)
    for other in PARTS:
        skipped = bool(check.skipping(other))
        assert skipped == (skips and part in ("*", other)), f"{other}: {check.skipping(other)}"
    # `grader contract` reads the same check: it fails, naming the problem and whether its part goes ungraded
    done = CliRunner().invoke(grader_cli, ["contract", str(folder)])
    assert done.exit_code == 1
    assert check.problems[0].message.splitlines()[0] in done.output
    if not skips:
        assert "graded" not in done.output
    else:
        assert ("nothing is graded" if part == "*" else f"its {part} criteria are not graded") in done.output


def test_a_grade_skips_exactly_the_parts_the_check_says_and_grades_the_others(tmp_path: Path) -> None:
    """A memo file that does not exist skips the memo's criteria; a manifests file that does not exist is graded, and
    its criteria fail reading it; the problems of both are in the grade's contract problems."""
    folder = _reference(tmp_path)
    _memo_missing(folder)
    _manifests_missing(folder)
    result = grade(GradeRequest(folder, tmp_path / "out", only=("memo", "manifests"), echo=lambda _: None))
    by_part = {
        c.deliverable: {x.status for x in result.criteria if x.deliverable == c.deliverable} for c in result.criteria
    }
    assert by_part["memo"] == {"skipped"}
    assert "skipped" not in by_part["manifests"] and "failed" in by_part["manifests"]
    assert any("memo/MEMO.md does not exist" in p for p in result.contract_problems)
    assert any("manifests/values.yaml does not exist" in p for p in result.contract_problems)


def test_a_memo_without_front_matter_is_named_as_submission_yaml_names_it(tmp_path: Path) -> None:
    """The problem names the memo by its path in the submission, never by this machine's folders (a report travels
    to the hiring team, and a recording to another checkout)."""
    folder = tmp_path / "sub"
    shutil.copytree(REFERENCE, folder, ignore=shutil.ignore_patterns("__pycache__", ".pytest_cache"))
    (folder / "memo" / "MEMO.md").write_text("no front matter here\n", encoding="utf-8")
    lines = [p.message for p in check_submission(folder).problems if p.part == "memo"]
    assert lines and lines[0].startswith("memo: memo/MEMO.md: line 1:"), lines
    assert not any(str(tmp_path) in line for line in lines)
