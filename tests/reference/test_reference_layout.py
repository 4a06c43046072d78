"""The reference solution is a submission beside the chaff, not part of the installed grader."""

from __future__ import annotations

import tomllib

from kit_paths import ROOT
from setuptools import find_namespace_packages

from grader.contract import load_submission


def test_reference_is_a_submission_outside_the_grader_package() -> None:
    assert load_submission(ROOT / "submissions" / "reference").folder.name == "reference"
    assert not (ROOT / "grader" / "reference").exists()


def test_packaged_modules_leave_out_the_submissions() -> None:
    """The packages setuptools finds with the project's own settings (what a wheel would hold)."""
    find = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]["packages"]["find"]
    packages = find_namespace_packages(where=str(ROOT), include=find["include"], exclude=find.get("exclude", ()))
    assert "grader" in packages and "fake_server" in packages
    assert not [p for p in packages if "reference" in p or "chaff" in p or p.startswith("submissions")]
