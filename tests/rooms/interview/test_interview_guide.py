"""The interviewer's guide (`grader interview`), written from recorded runs in milliseconds: the reference, two
chaff and the frameworks submission (tests/fixtures/runs/NAME, recorded by `make fixtures`).

Every failed or borderline criterion gets a question that cites its evidence; the figures a question quotes
are recomputed here from the raw records (the request whose `start` came closest to its limit, the case
where the gateway's route header differed from the ledgers'); report.html links to the guide; the
interviewer's points go where a person's points go (report.json, report.html, the round's summary), survive a
re-judge, and a blind round's guide names nobody.
"""

from __future__ import annotations

import gzip
import json
import re
import shutil
from pathlib import Path
from typing import Any

import pytest
import yaml
from chromium import needs_chromium, png_pixels, render_with_chromium
from click.testing import CliRunner
from recorded import AS_GRADED, FIXTURES, digest

from grader.cli import main
from grader.cli.round_modes import echo_summary, run_human_score
from grader.grading.rejudge import rejudge
from grader.interview.figures import field_names
from grader.interview.write import write_interview
from grader.kit.traceability import statements
from grader.reports.interview_part import END, START
from grader.round.blind import BLIND, CODES
from grader.round.rebuild import SummaryOptions
from grader.round.summary import read_rows, write_index
from grader.rubric import load_rubric
from grader.rubric.questions import QUESTIONS_FILE, QuestionBankError, load_questions

RUBRIC = load_rubric()
GUIDED = ["reference", "ttft-includes-slot-wait", "gateway-502-passed-through", "frameworks"]


def _graded(name: str, folder: Path, *, candidate: str | None = None) -> Path:
    """A report folder as a grade leaves it: the fixture's records, and the reports judged from them."""
    shutil.copytree(FIXTURES / name, folder / "runs", ignore=shutil.ignore_patterns("source.txt"))
    if candidate is not None:
        index = json.loads((folder / "runs" / "index.json").read_text())
        index["candidate"] = candidate
        (folder / "runs" / "index.json").write_text(json.dumps(index))
    rejudge(folder)
    return folder


def _record(folder: Path, name: str) -> dict[str, Any]:
    data: dict[str, Any] = json.loads(gzip.decompress((folder / "runs" / name).read_bytes()))
    return data


def _questions(markdown: str) -> list[tuple[str, str, str]]:
    """(criterion, outcome, question text) of every question the Markdown guide asks."""
    found = re.findall(r"^\*\*\d+\.\*\* (.*)\n  \*\(([a-z]+\.[a-z0-9-]+), ([a-z]+);", markdown, re.MULTILINE)
    return [(criterion, outcome, text) for text, criterion, outcome in found]


def test_the_bank_has_a_question_for_every_criterion_and_outcome_and_two_for_every_statement() -> None:
    bank = load_questions(RUBRIC, figures=field_names())
    assert bank is not None and QUESTIONS_FILE.parent.name == "unseen"  # never in the bundle (test_bundle.py)
    for criterion in RUBRIC.criteria:
        for outcome in ("failed", "borderline", "passed"):
            assert bank.matching(criterion.id, outcome), (criterion.id, outcome)
    asked = bank.by_anchor()
    assert {s.anchor: len(asked.get(s.anchor, [])) >= 2 for s in statements()} == {s.anchor: True for s in statements()}


def test_a_broken_bank_is_named_by_file_and_field(tmp_path: Path) -> None:
    data = yaml.safe_load(QUESTIONS_FILE.read_text())
    data["questions"][0]["anchor"] = "def-tps"  # not one of loadgen.runs's anchors
    data["questions"][1]["ask"] = "Where is {no_such_field}?"
    path = tmp_path / "questions.yaml"
    path.write_text(yaml.safe_dump(data))
    with pytest.raises(QuestionBankError) as caught:
        load_questions(RUBRIC, figures=field_names(), path=path)
    lines = str(caught.value).splitlines()
    assert len(lines) == 2 and all(line.startswith(f"{path}: questions[") for line in lines), lines
    assert "questions[0] (runs-what-happened).anchor: 'def-tps' is not one of loadgen.runs's anchors" in lines[0]
    assert "questions[1] (runs-exit-status).ask: {no_such_field} is not a field of figure verdict" in lines[1]


def test_the_frameworks_records_are_those_of_todays_submission() -> None:
    folder, _ = AS_GRADED["frameworks"]
    assert (FIXTURES / "frameworks" / "source.txt").read_text().strip() == digest(folder), "record: make fixtures"


@pytest.mark.parametrize("name", GUIDED)
def test_every_failure_and_close_call_has_a_question_citing_its_evidence(name: str, tmp_path: Path) -> None:
    folder = _graded(name, tmp_path / name)
    assert START + END in (folder / "report.html").read_text(), "a grade's report has the section's place, empty"
    paths = write_interview(folder)
    assert [p.name for p in paths] == ["guide.md", "guide.html"]
    markdown, page = (paths[0].read_text(), paths[1].read_text())
    report = json.loads((folder / "report.json").read_text())
    asked = _questions(markdown)
    close = [c for c in report["extra_data"]["kit"]["criteria"] if c["status"] != "passed" or c["attempts"] > 1]
    if name not in ("reference", "frameworks"):  # a chaff fails; an independent submission may pass clean
        assert close, f"{name}: the fixture has no failure or close call to ask about"
    for criterion in close:
        lines = [" ".join(ln.strip(" -").split()) for ln in criterion["output"].splitlines() if ln.strip(" -")]
        cited = [text for cid, outcome, text in asked if cid == criterion["id"] and outcome != "passed"]
        assert cited, f"{criterion['id']} ({criterion['status']}) has no question"
        # the problem the check named, or what it named it for (the case, the request, the input set) with its facts
        lines = [line for line in lines if not line.startswith("INCONCLUSIVE")]
        subjects = {line.split(":")[0] for line in lines if ":" in line and len(line.split(":")[0]) > 4}
        assert any(line[:60] in text for text in cited for line in lines) or any(
            f"{subject} " in text for text in cited for subject in subjects
        ), (criterion["id"], cited)
    # passed criteria get their closest calls asked about too, and every question says what a good answer covers
    assert any(outcome == "passed" for _, outcome, _ in asked)
    assert markdown.count("A good answer covers:") == len(asked) > 0
    # the scoring sheet is in report.json, where a person's points go, and report.html links the guide
    sheet = [e for e in report["extra_data"]["human"]["checklist"] if e["id"].startswith("interview.")]
    assert len(sheet) == len(re.findall(r"^\| interview\.\d+ \|", markdown, re.MULTILINE)) >= len(asked)
    assert report["extra_data"]["human"]["interview_guide"] == "interview/guide.html"
    html = (folder / "report.html").read_text()
    assert 'href="interview/guide.html"' in html[html.index(START) : html.index(END)]
    # the guide's page is as self-contained as the report: no script, no outside address
    assert "<script" not in page and not re.search(r"(src|href)=\"https?:", page)
    assert f"{len(asked)}. " in page and "Scoring sheet" in page
    if name == "frameworks":  # the same records give the same guide, byte for byte
        assert [p.read_text() for p in write_interview(folder)] == [markdown, page]


def _ok_ledger(record: dict[str, Any]) -> bool:
    kinds = [c[1] for c in record.get("chunks") or []]
    fault = record.get("fault") or {}
    return record.get("status") == 200 and "done" in kinds and "content" in kinds and not fault.get("applied", False)


@pytest.mark.parametrize("name", ["ttft-includes-slot-wait", "reference"])
def test_a_ttft_question_cites_the_request_whose_start_came_closest_to_its_limit(name: str, tmp_path: Path) -> None:
    folder = _graded(name, tmp_path / name)
    markdown = write_interview(folder)[0].read_text()
    run = _record(folder, "loadgen-baseline.json.gz")
    (results,) = run["files"].values()
    ledger = {r["id"]: r for r in run["ledger"]}
    leads = [
        (ledger[r["id"]]["arrival"] - r["start"], r["index"])
        for r in json.loads(results)["requests"]
        if r.get("id") in ledger and _ok_ledger(ledger[r["id"]]) and r.get("outcome") == "ok"
    ]
    lead, index = max(leads)
    ttft = [text for cid, _, text in _questions(markdown) if cid == "loadgen.ttft"]
    assert any(f"baseline#{index} " in text and f" {lead * 1000:.0f} ms " in text for text in ttft), (index, lead, ttft)


def test_a_headers_question_names_the_case_where_the_route_differed_from_the_ledgers(tmp_path: Path) -> None:
    folder = _graded("gateway-502-passed-through", tmp_path / "gw")
    markdown = write_interview(folder)[0].read_text()
    differed = []
    for case in _record(folder, "gateway.json.gz")["cases"]:
        if case["case"].get("kind", "one") != "one" or not case["answers"]:
            continue
        answer = case["answers"][0]
        header = {k.lower(): v for k, v in answer["headers"].items()}.get("x-gateway-route")
        status = answer["status"]
        truth = ("api" if case["api"] else "local") if status == 200 else "none"
        for route in ("api", "local"):
            if status and 400 <= status < 500 and any(r["status"] == status for r in case[route]):
                truth = route
        if header != truth:
            differed.append((case["case"]["name"], header, truth))
    assert differed, "the chaff's record shows no route header off the ledgers"
    name, header, truth = differed[0]
    headers = [text for cid, _, text in _questions(markdown) if cid == "gateway.headers"]
    assert any(f"In case {name} " in t and f"route {header}," in t and f"{truth} answering" in t for t in headers)
    assert any("differed from them" in t for t in headers)


def test_interview_points_go_where_a_persons_points_go_and_survive_a_rejudge(tmp_path: Path) -> None:
    out = tmp_path / "round"
    folder = _graded("reference", out / "ada")
    _graded("reference", out / "ben")
    write_interview(folder)
    before = json.loads((folder / "report.json").read_text())
    result = CliRunner().invoke(
        main, ["human-score", str(folder / "report.json"), "interview.1=2/3", "interview.2=3/3"]
    )
    assert result.exit_code == 0, result.output
    after = json.loads((folder / "report.json").read_text())
    assert (after["score"], after["max_score"]) == (before["score"] + 5, before["max_score"] + 6)
    assert [t["tags"] for t in after["tests"] if "interview" in t["tags"]] == [["human", "interview"]] * 2

    def section() -> str:
        html = (folder / "report.html").read_text()
        return html[html.index(START) : html.index(END)]

    automated = f"{before['score']:g} / {before['max_score']:g}"
    assert f"<dt>Automated score</dt><dd>{automated}</dd>" in section()
    assert "<dt>Interview</dt><dd>5 / 6</dd>" in section()
    rejudge(folder)  # judged again from the records: the sheet, the guide and the points are kept
    again = json.loads((folder / "report.json").read_text())
    assert again["score"] == after["score"] and again["extra_data"]["human"] == after["extra_data"]["human"]
    assert "<dt>Interview</dt><dd>5 / 6</dd>" in section()
    rows = {r.name: r for r in read_rows(out)}
    assert (rows["ada"].interview_score, rows["ada"].interview_max, rows["ben"].interview_score) == (5, 6, None)
    assert [r.name for r in read_rows(out)] == ["ada", "ben"] and rows["ada"].rank < rows["ben"].rank
    index = write_index(read_rows(out), out)["index.html"].read_text()
    assert '<a href="ada/interview/guide.html">5 / 6</a>' in index and "<th class=num>Interview</th>" in index
    grades = (out / "grades.csv").read_text().splitlines()
    assert "interview_score" in grades[0].split(",") and grades[1].split(",")[7] == "5"


def test_in_a_round_reviewed_blind_the_guide_names_nobody_and_its_points_come_back(tmp_path: Path) -> None:
    out = tmp_path / "grades"
    folder = _graded("reference", out / "ada-lovelace", candidate="Ada Lovelace")
    echo_summary(out, SummaryOptions(threshold=None, anonymize=True))
    code = json.loads((out / CODES).read_text())["ada-lovelace"]
    paths = write_interview(folder)
    copy = out / BLIND / code
    for path in [*paths, copy / "interview" / "guide.md", copy / "interview" / "guide.html", copy / "report.json"]:
        text = path.read_text()
        assert not re.search(r"ada|lovelace", text, re.IGNORECASE), f"{path} names the candidate"
        assert code in text or path.name == "report.json"
    assert f"Interviewer's guide: {code}" in paths[0].read_text()
    run_human_score(copy / "report.json", ["interview.1=3/3"])  # scored on the reviewers' copy
    echo_summary(out, SummaryOptions(threshold=None, anonymize=True))
    (row,) = read_rows(out)
    assert row.interview_score == 3
    assert (copy / "interview" / "guide.html").is_file(), "the blind copy, written again, keeps the guide"


def test_a_folder_without_records_is_refused_in_one_line(tmp_path: Path) -> None:
    result = CliRunner().invoke(main, ["interview", str(tmp_path)])
    assert result.exit_code == 2
    assert "no run records here" in result.output and "Traceback" not in result.output


@pytest.mark.slow
@needs_chromium
@pytest.mark.rotating(12)
def test_chromium_renders_the_guide_and_its_every_section(tmp_path: Path) -> None:
    folder = _graded("frameworks", tmp_path / "frameworks")
    markdown, page = write_interview(folder)
    dom = render_with_chromium(tmp_path, "--virtual-time-budget=2000", "--dump-dom", page.resolve().as_uri()).stdout
    for section in ("summary", "glance", "loadgen", "gateway", "live", "sheet"):
        assert f'id="{section}"' in dom, section
    assert dom.count('class="question"') == len(_questions(markdown.read_text())) > 0
    assert "<script" not in dom
    shot = tmp_path / "guide.png"
    render_with_chromium(tmp_path, f"--screenshot={shot}", "--window-size=1200,1800", page.resolve().as_uri())
    width, height, rows = png_pixels(shot)
    bpp = len(rows[0]) // width
    colours = {rows[y][x * bpp : x * bpp + 3] for y in range(0, height, 7) for x in range(0, width, 7)}
    assert (width, height) == (1200, 1800) and len(colours) > 50, f"a nearly blank page: {len(colours)} colours"
