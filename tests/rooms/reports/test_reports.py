"""report.json, junit.xml and the terminal table: shapes checked against the committed schemas,
statuses mapped as Gradescope and JUnit understand them, hostile text carried safely, output
byte-identical for the same Grade (also across processes), and human scores folded in."""

from __future__ import annotations

import copy
import dataclasses
import json
import re
import subprocess
import sys
import xml.etree.ElementTree as ET
from collections.abc import Callable
from pathlib import Path
from typing import Any, Literal

import jsonschema
import pytest
import xmlschema
from kit_paths import ROOT
from report_samples import EVIL_SCRIPT, sample_grade

from grader.outcome import Plot
from grader.reports import (
    HumanScoreError,
    apply_human_scores,
    score_table,
    to_gradescope,
    to_junit,
    write_reports,
)
from grader.reports.plots import MAX_POINTS, plot_svg, thin
from grader.reports.text import REPLAYS_LISTED

REPORT_SCHEMA = json.loads((ROOT / "schemas" / "grader" / "report.schema.json").read_text())
JUNIT_XSD = xmlschema.XMLSchema(str(ROOT / "schemas" / "grader" / "junit.xsd"))


def _schema_errors(document: dict[str, Any]) -> list[str]:
    validator = jsonschema.Draft202012Validator(REPORT_SCHEMA)
    return [f"{'/'.join(map(str, e.absolute_path))}: {e.message}" for e in validator.iter_errors(document)]


def test_report_schema_is_a_valid_draft_2020_12_schema() -> None:
    jsonschema.Draft202012Validator.check_schema(REPORT_SCHEMA)


@pytest.mark.parametrize("sandboxed", [False, True])
def test_report_json_validates_and_totals_match_the_criteria(tmp_path: Path, sandboxed: bool) -> None:
    paths = write_reports(sample_grade(sandboxed=sandboxed), tmp_path / "new" / "out")
    document = json.loads(paths["json"].read_text(encoding="utf-8"))
    assert _schema_errors(document) == []
    # passed 3/3 + failed 0/2 + inconclusive 0/2 + skipped 0/2 + failed 2/3
    assert (document["score"], document["max_score"]) == (5, 12)
    assert [t["score"] for t in document["tests"]] == [3, 0, 0, 0, 2]
    assert document["output"].startswith("UNSANDBOXED") is (not sandboxed)
    assert (document["visibility"], document["stdout_visibility"]) == ("visible", "hidden")


def test_gradescope_statuses_visibility_and_tags() -> None:
    tests = {t["extra_data"]["id"]: t for t in to_gradescope(sample_grade())["tests"]}
    assert {t["status"] for t in tests.values()} == {"passed", "failed"}
    inconclusive, skipped = tests["loadgen.p90-queue"], tests["gateway.fallback-5xx"]
    assert inconclusive["status"] == skipped["status"] == "failed"
    assert inconclusive["output"].startswith("INCONCLUSIVE: ") and "inconclusive" in inconclusive["tags"]
    assert skipped["output"].startswith("SKIPPED: ") and "skipped" in skipped["tags"]
    assert tests["loadgen.role-chunk"]["visibility"] == "after_published"
    assert tests["loadgen.ttft"]["visibility"] == "visible"
    assert tests["loadgen.ttft"]["tags"] == ["loadgen", "passed", "baseline"]
    assert tests["loadgen.ttft"]["name"] == "loadgen.ttft: TTFT per request matches the ledger"
    assert "±20 ms per request" in tests["loadgen.ttft"]["output"]


def test_every_output_is_plain_text_for_gradescope() -> None:
    document = to_gradescope(sample_grade())
    assert document["output_format"] == document["test_output_format"] == document["test_name_format"] == "text"
    assert all(t["output_format"] == "text" for t in document["tests"])


def test_kit_data_keeps_the_grade_without_plots() -> None:
    grade = sample_grade()
    kit = to_gradescope(grade)["extra_data"]["kit"]
    assert [c["id"] for c in kit["criteria"]] == [c.id for c in grade.criteria]
    assert all("plots" not in c["evidence"] for c in kit["criteria"])
    assert len(kit["criteria"][0]["evidence"]["rows"]) == 40
    assert kit["seed"] == 42 and kit["sandboxed"] is False


@pytest.mark.parametrize(
    ("change", "where"),
    [
        (lambda d: d["tests"][0].update(status="inconclusive"), "tests/0/status"),
        (lambda d: d.update(output="Score 5 / 12"), "output"),
        (lambda d: d.update(leaderboard_extra=1), ""),
        (lambda d: d["tests"][2].update(score=1), "tests/2/score"),
        (lambda d: d["tests"][1].update(visibility="public"), "tests/1/visibility"),
    ],
)
def test_report_schema_rejects_what_gradescope_or_the_kit_would_not_accept(
    change: Callable[[dict[str, Any]], object], where: str
) -> None:
    document = copy.deepcopy(to_gradescope(sample_grade()))
    assert _schema_errors(document) == []
    change(document)
    errors = _schema_errors(document)
    assert errors and any(e.startswith(f"{where}:") for e in errors), errors


def test_hostile_text_is_carried_as_visible_escapes(tmp_path: Path) -> None:
    grade = sample_grade()
    grade.criteria[1].visibility = "public"  # a hidden criterion's output is not in report.json at all
    raw = write_reports(grade, tmp_path)["json"].read_bytes()
    text = raw.decode("utf-8")  # strict: a lone surrogate would not have been encodable
    document = json.loads(text)
    output = next(t["output"] for t in document["tests"] if t["extra_data"]["id"] == "loadgen.role-chunk")
    assert EVIL_SCRIPT in output
    assert "\\x1b[31mred" in output and "\x1b" not in output
    assert "\\x00" in output and "\x00" not in output
    assert "\\udc80" in output


def _message(element: ET.Element | None) -> str:
    """A JUnit failure's or skip's message: the element must be there, and carry one."""
    assert element is not None
    message = element.get("message")
    assert message is not None, ET.tostring(element)
    return message


def test_junit_validates_against_the_xsd_with_one_suite_per_deliverable(tmp_path: Path) -> None:
    path = write_reports(sample_grade(), tmp_path)["junit"]
    JUNIT_XSD.validate(str(path))
    root = ET.parse(path).getroot()
    suites = {s.get("name"): s for s in root.iter("testsuite")}
    assert list(suites) == ["loadgen", "gateway", "tests"]
    assert {k: suites["loadgen"].get(k) for k in ("tests", "failures", "errors", "skipped")} == {
        "tests": "3",
        "failures": "1",
        "errors": "0",
        "skipped": "1",
    }
    assert (root.get("tests"), root.get("failures"), root.get("skipped")) == ("5", "2", "2")
    cases = {c.get("name"): c for c in root.iter("testcase")}
    assert cases["loadgen.ttft"].get("classname") == "loadgen" and cases["loadgen.ttft"].get("time") == "2.500"
    assert cases["loadgen.ttft"].find("failure") is None and cases["loadgen.ttft"].find("skipped") is None
    failure = cases["loadgen.role-chunk"].find("failure")
    assert _message(failure).startswith("TTFT 0.01 s reported")
    assert failure is not None and failure.text is not None
    assert EVIL_SCRIPT in failure.text  # parsed back as text: it was escaped, not markup
    assert _message(cases["gateway.fallback-5xx"].find("skipped")).startswith("Not run")
    assert _message(cases["loadgen.p90-queue"].find("skipped")).startswith("inconclusive: Borderline")
    assert cases["tests.chaff"].find("failure") is not None


def test_junit_says_unsandboxed_before_anything_else() -> None:
    text = to_junit(sample_grade(sandboxed=False))
    assert text.splitlines()[1].startswith("<!-- UNSANDBOXED")
    assert 'name="UNSANDBOXED ' in text
    assert "UNSANDBOXED" not in to_junit(sample_grade(sandboxed=True))


def test_junit_xsd_rejects_a_broken_file(tmp_path: Path) -> None:
    bad = to_junit(sample_grade()).replace('name="loadgen.ttft" ', "", 1)
    assert not JUNIT_XSD.is_valid(bad)
    two_outcomes = to_junit(sample_grade()).replace('<failure message="TTFT', '<skipped /><failure message="TTFT', 1)
    assert two_outcomes != to_junit(sample_grade())
    assert not JUNIT_XSD.is_valid(two_outcomes)


def test_reports_are_byte_identical_for_the_same_grade_even_in_another_process(tmp_path: Path) -> None:
    first = write_reports(sample_grade(), tmp_path / "a")
    second = write_reports(sample_grade(), tmp_path / "b")
    code = (
        "import sys; from pathlib import Path; from grader.reports import write_reports; "
        "from report_samples import sample_grade; write_reports(sample_grade(), Path(sys.argv[1]))"
    )
    subprocess.run([sys.executable, "-c", code, str(tmp_path / "c")], cwd=ROOT / "tests", check=True, timeout=120)
    for fmt, path in first.items():
        assert path.read_bytes() == second[fmt].read_bytes() == (tmp_path / "c" / path.name).read_bytes(), fmt
    assert sorted(p.name for p in (tmp_path / "a").iterdir()) == ["junit.xml", "report.html", "report.json"]


def test_score_table_has_a_line_per_criterion_and_the_total() -> None:
    table = score_table(sample_grade()).splitlines()
    assert table[0].startswith("UNSANDBOXED")
    total = next(i for i, line in enumerate(table) if line.startswith("TOTAL"))
    body = [line.split() for line in table[2:total]]
    assert [(row[0], row[1], row[2]) for row in body] == [
        ("PASSED", "3/3", "loadgen.ttft"),
        ("FAILED", "0/2", "loadgen.role-chunk"),
        ("INCONCLUSIVE", "0/2", "loadgen.p90-queue"),
        ("SKIPPED", "0/2", "gateway.fallback-5xx"),
        ("FAILED", "2/3", "tests.chaff"),
    ]
    assert "[hidden]" in table[3]
    assert table[total].split() == ["TOTAL", "5/12"]
    # each failed or undecided public criterion's replay, the submission quoted for a shell; none for the hidden one
    assert table[total + 3 : total + 5] == [
        f"  grader replay 'submissions/<candidate-7>' {criterion} --seed 42"
        for criterion in ("loadgen.p90-queue", "tests.chaff")
    ]
    # then a pass that came close to its limit: its closest call, and its replay
    assert table[total + 6].startswith("Near misses (passed, but close to a limit")
    assert table[total + 7] == (
        "  loadgen.ttft: request 7: TTFT stops +16 ms from the first content chunk the server "
        "sent; allowed 20 ms (margin 0.82)"
    )
    assert table[total + 8] == "    grader replay 'submissions/<candidate-7>' loadgen.ttft --seed 42"
    assert not score_table(sample_grade(sandboxed=True)).startswith("UNSANDBOXED")


def test_a_grade_that_fails_nearly_everything_lists_a_few_replays_and_says_how_to_replay_the_rest() -> None:
    grade = sample_grade()
    failed = next(c for c in grade.criteria if c.id == "tests.chaff")
    grade.criteria = [dataclasses.replace(failed, id=f"tests.c{i}") for i in range(REPLAYS_LISTED + 4)]
    table = score_table(grade).splitlines()
    listed = [line for line in table if line.startswith("  grader replay")]
    assert [line.split()[3] for line in listed] == [f"tests.c{i}" for i in range(REPLAYS_LISTED)]
    assert table[-1] == (
        "  ... and 4 more: grader replay 'submissions/<candidate-7>' ID --seed 42, with a failed ID above"
    )


def test_human_scores_fold_into_the_totals(tmp_path: Path) -> None:
    path = write_reports(sample_grade(), tmp_path)["json"]
    before = json.loads(path.read_text())
    assert [i["score"] for i in before["extra_data"]["human"]["checklist"]] == [None, None]
    assert before["extra_data"]["human"]["applied"] is False

    after = apply_human_scores(path, {"human.1": (3, 4), "Memo: are the limits named " + EVIL_SCRIPT: (1, 1)})
    assert json.loads(path.read_text()) == after
    assert _schema_errors(after) == []
    assert (after["score"], after["max_score"]) == (5 + 3 + 1, 12 + 4 + 1)
    human_tests = [t for t in after["tests"] if "human" in t["tags"]]
    assert [(t["score"], t["max_score"], t["status"]) for t in human_tests] == [(3, 4, "failed"), (1, 1, "passed")]
    assert after["extra_data"]["human"]["applied"] is True

    again = apply_human_scores(path, {"human.1": {"score": 4, "max_score": 4}})  # a correction replaces
    assert (again["score"], again["max_score"]) == (5 + 4 + 1, 12 + 4 + 1)
    assert len([t for t in again["tests"] if "human" in t["tags"]]) == 2


@pytest.mark.parametrize(
    ("scores", "says"),
    [
        ({"human.9": (1, 1)}, "no checklist item 'human.9'"),
        ({"human.1": (5, 4)}, "human.1: score 5 must lie in 0..max_score"),
        ({"human.2": (-1, 4)}, "human.2: score -1"),
        ({"human.1": "good"}, "human.1: a human score is (score, max_score)"),
        ({"human.1": (1, 2), "Memo: is the sizing argument sound?": (1, 2)}, "human.1 scored twice"),
    ],
)
def test_bad_human_scores_are_refused_by_item_and_leave_the_file_alone(
    tmp_path: Path, scores: dict[str, Any], says: str
) -> None:
    path = write_reports(sample_grade(), tmp_path)["json"]
    before = path.read_bytes()
    with pytest.raises(HumanScoreError, match=re.escape(says)):
        apply_human_scores(path, scores)
    assert path.read_bytes() == before


def test_human_scores_need_a_kit_report(tmp_path: Path) -> None:
    path = tmp_path / "results.json"
    path.write_text('{"score": 1, "tests": []}')
    with pytest.raises(HumanScoreError, match="results.json: not a kit report.json"):
        apply_human_scores(path, {"human.1": (1, 1)})


def test_thinning_keeps_the_ends_and_the_limit() -> None:
    points = [(float(i), float(i * i)) for i in range(1001)]
    kept = thin(points)
    assert len(kept) == MAX_POINTS and kept[0] == points[0] and kept[-1] == points[-1]
    assert kept == sorted(kept) and len(set(kept)) == MAX_POINTS
    assert thin(points[:10]) == points[:10]


@pytest.mark.parametrize("kind", ["scatter", "step", "bar"])
def test_plot_svg_is_static_and_reproducible(kind: Literal["scatter", "step", "bar"]) -> None:
    series = {"a": [(float(i), float(i % 7)) for i in range(1, 500)], EVIL_SCRIPT: [(1.0, 2.0), (3.0, 1.0)]}
    plot = Plot(kind=kind, title="t " + EVIL_SCRIPT, x_label="x", y_label="y", series=series, diagonal=True)
    svg, dropped = plot_svg(plot, "c-1")
    assert svg == plot_svg(plot, "c-1")[0]
    assert dropped == 499 - MAX_POINTS
    root = ET.fromstring(svg)  # well-formed on its own
    assert root.get("id") == "chart-c-1"
    assert re.findall(r"https?://[^\s\"'<>]+", svg) == ["http://www.w3.org/2000/svg"]
    assert "<script" not in svg and "<!--" not in svg and "uuid" not in svg
    assert "&lt;script&gt;" in svg
    drawn = {"scatter": "circle", "step": "path", "bar": "rect"}[kind]
    assert len(root.findall(f".//{{http://www.w3.org/2000/svg}}{drawn}")) > (MAX_POINTS if kind == "scatter" else 1)


def test_odd_evidence_and_an_empty_grade_still_give_valid_reports(tmp_path: Path) -> None:
    grade = sample_grade(sandboxed=True)
    odd = grade.criteria[0].evidence
    odd.rows = [[1], [1, 2, 3, 4], [None, float("nan"), float("inf")], [Path("/tmp/x"), b"\x00raw"]]
    odd.plots = [
        Plot(kind="scatter", title="no series", x_label="", y_label="", series={}, diagonal=True),
        Plot(
            kind="step",
            title="not finite",
            x_label="",
            y_label="",
            series={"s": [(float("nan"), 1.0), (1.0, float("inf")), (2.0, 3.0)]},
        ),
    ]
    empty = sample_grade(sandboxed=True)
    empty.criteria, empty.human_checklist, empty.contract_problems = [], [], []
    for name, g in (("odd", grade), ("empty", empty)):
        paths = write_reports(g, tmp_path / name)
        document = json.loads(paths["json"].read_text(encoding="utf-8"))
        assert _schema_errors(document) == [], name
        JUNIT_XSD.validate(str(paths["junit"]))
        assert paths["html"].read_text(encoding="utf-8").endswith("</html>\n")
    rows = json.loads((tmp_path / "odd" / "report.json").read_text())["extra_data"]["kit"]["criteria"][0]
    assert rows["evidence"]["rows"][2] == [None, "nan", "inf"]
    assert rows["evidence"]["rows"][3] == ["/tmp/x", repr(b"\x00raw")]
    assert json.loads((tmp_path / "empty" / "report.json").read_text())["score"] == 0
