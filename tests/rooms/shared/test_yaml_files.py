"""One YAML reader and one front-matter reader: errors name the file and the line, and `grader contract`
and `grader grade` read a memo's front matter the same way (they used to disagree on three memos)."""

from __future__ import annotations

from pathlib import Path

import pytest

from grader.contract import ContractError, memo_front_matter
from grader.criteria.memo_rules import check_memo
from grader.shared.yaml_files import YamlError, read_yaml, split_front_matter

GOOD = "contract: 1\nfigures:\n- {name: ttft_p50, value: 0.2, unit: s, provenance: assumption, status: placeholder}\n"


def test_a_yaml_error_names_the_file_and_line_and_numbers_read_as_a_person_means(tmp_path: Path) -> None:
    path = tmp_path / "x.yaml"
    path.write_text("a: 1\nb: [2,\nc: 3\n")
    with pytest.raises(YamlError, match=rf"^{path}: line \d+: not valid YAML \("):
        read_yaml(path)
    path.write_text("\ufeffrel: 5e-3\nabs_s: 2.5E-2\nname: 1e3x\n")
    assert read_yaml(path) == {"rel": 0.005, "abs_s": 0.025, "name": "1e3x"}


@pytest.mark.parametrize(
    ("text", "reads"),
    [
        (f"---\n{GOOD}---\n# Memo\n", True),
        (f"\ufeff---\n{GOOD}---\n# Memo\n", True),  # a byte-order mark before the fence
        (f"---  \n{GOOD}---\t\n# Memo\n", True),  # trailing blanks on the fences
        ("---\n---\n# Memo\n", False),  # empty front matter
        (f"  ---\n{GOOD}---\n# Memo\n", False),  # an indented fence is no fence
        (f"---\n{GOOD}  ---\n# Memo\n", False),  # nor is an indented closing one
        ("---\n- a\n- b\n---\n", False),  # not a mapping
    ],
)
def test_contract_and_grade_agree_on_what_a_front_matter_is(tmp_path: Path, text: str, reads: bool) -> None:
    memo = tmp_path / "MEMO.md"
    memo.write_text(text, encoding="utf-8")
    try:
        memo_front_matter(memo)
        contract_reads = True
    except ContractError:
        contract_reads = False
    grade_reads = not any(f.rule == "front-matter" for f in check_memo(text))
    try:
        split_front_matter(text, source="MEMO.md")
        reader_reads = True
    except YamlError as exc:
        reader_reads = False
        assert "line" in str(exc) or "lines" in str(exc)
    assert contract_reads == grade_reads == reader_reads == reads
