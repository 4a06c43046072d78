"""Every criterion judged from recorded runs, with nothing running: the reference's records pass every
criterion, and each chaff's records lose exactly its targets.

The records in tests/fixtures/runs/ were made by `make fixtures` (tests/recorded.py) from the
reference and every chaff. A fixture whose submission, scenario, gateway plan or input sets no
longer match today's is stale: the test says so (record again) rather than judge old facts as new.
`grader selftest` (the slow tier) still runs everything for real.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from recorded import AS_GRADED, BUILT, CORRECT, FIXTURES, INDEPENDENT, ROOT, digest, source_of

from grader.grading.rejudge import grade_of
from grader.kit.chaff import list_chaff
from grader.kit.selftest import _judge
from grader.kit.selftest import kept as kept_target
from grader.records.book import RecordBook
from grader.rubric import load_rubric
from grader.rubric.variants import load_variants

RUBRIC = load_rubric()
VARIANTS = load_variants(RUBRIC)
CHAFF = {c.name: c for c in list_chaff(ROOT / "submissions" / "chaff")}
NAMES = ["reference", *sorted(CHAFF), *INDEPENDENT, *BUILT, *AS_GRADED]


def _book(name: str) -> RecordBook:
    folder = FIXTURES / name
    if not (folder / "index.json").is_file():
        pytest.fail(f"no recorded runs for {name} in {folder}: record them with `make fixtures`")
    return RecordBook.read(folder)


def _stale(name: str, book: RecordBook, scratch: Path) -> list[str]:
    """What changed since the fixture was recorded: its submission, a scenario, the gateway plan or the sets."""
    out = []
    rubric = RUBRIC.for_grade(book.index)  # the brief the fixture's grade followed
    if (FIXTURES / name / "source.txt").read_text().strip() != digest(source_of(name, scratch)):
        out.append("the submission changed")
    sizing = load_rubric().sizing.with_hidden()
    sets, _base, perturb = sizing.sets, sizing.perturb_base, sizing.perturb
    variants = book.index.get("variants", {}).get("count", 0)
    # The selftest (and so `make fixtures`) grades a chaff not fitted to the public scenarios without the unseen
    # variants: recorded so, it has none, whatever their number today.
    without = name in CHAFF and not CHAFF[name].unseen and variants == 0
    if variants != (VARIANTS.count if VARIANTS else 0) and not without:
        out.append("the number of unseen variants changed")
    for record in book.records.values():
        if record["section"] == "loadgen":
            name, _, variant = record["scenario"]["name"].partition(".v")
            scenario = rubric.scenarios.get(name)
            if scenario is not None and variant:
                if VARIANTS is not None and name in VARIANTS.loadgen:
                    scenario = VARIANTS.scenario(scenario, int(variant), book.index["seed"])
                else:
                    scenario = None
            if scenario is None or scenario.to_dict() != record["scenario"]:
                out.append(f"scenario {record['scenario']['name']} changed")
        elif record["section"] == "gateway":
            current = rubric.gateway
            if variant := record["key"].split("/")[0].split("@")[0].partition(".v")[2]:
                current = VARIANTS.gateway_plan(current, int(variant), book.index["seed"]) if VARIANTS else current
            plan, now = dict(record["plan"]), current.to_dict()
            recorded = {c["name"]: c for c in plan.pop("cases")}
            # how a busy machine is read is judging, not what was run: a record made before it was kept is current
            plan.pop("cpu_waiting", None)
            now.pop("cpu_waiting", None)
            if {k: v for k, v in now.items() if k != "cases"} != plan or any(
                recorded[c["name"]] != c for c in now["cases"] if c["name"] in recorded
            ):
                out.append("the gateway plan changed")
        elif record["section"] == "sizing":
            if {r["name"]: r["flags"] for r in record["sets"]} != sets or record["perturb"] != perturb:
                out.append("the sizing input sets changed")
            if [r["name"] for r in record.get("refusals", [])] != [r.name for r in sizing.refuse]:
                out.append("the sizing inputs to refuse changed")
    return out


@pytest.mark.parametrize("name", NAMES)
def test_the_recorded_runs_are_those_of_todays_submission_and_plan(name: str, tmp_path: Path) -> None:
    stale = _stale(name, _book(name), tmp_path)
    assert not stale, (
        f"{name}: the recorded runs are stale ({'; '.join(stale)}): record them again with `make fixtures`"
    )


def test_the_references_records_pass_every_criterion() -> None:
    book = _book("reference")
    assert book.index["criteria"] == [c.id for c in RUBRIC.criteria], "record the reference on the whole rubric"
    grade = grade_of(book, RUBRIC)
    wrong = {c.id: c.output for c in grade.criteria if c.status != "passed"}
    assert not wrong
    assert grade.score == grade.max_score


def test_the_selftest_lists_a_busy_machines_withheld_verdict_on_the_reference_and_fails_any_other() -> None:
    """The reference is graded whole: a criterion withheld because the machine was too busy to keep time is
    undecided, not wrong; withheld on a machine that kept time, or failed, it is wrong."""
    grade = grade_of(_book("reference"), RUBRIC)
    assert _judge("reference", grade, []).ok
    first = grade.criteria[0]
    first.status, first.score = "inconclusive", 0.0
    first.busy = "the fake server's steps ran 0.9 s late"
    busy = _judge("reference", grade, [])
    assert busy.ok and busy.inconclusive == [first.id]
    first.busy = None
    assert not _judge("reference", grade, []).ok
    first.status = "failed"
    first.busy = "the fake server's steps ran 0.9 s late"
    assert not _judge("reference", grade, []).ok


@pytest.mark.parametrize("name", sorted(CORRECT))
def test_a_correct_submissions_records_pass_every_criterion_of_what_it_implements(name: str) -> None:
    """An independent submission written from TASK.md alone, one built on the frameworks serving engineers reach
    for first, and the reference's client with a cold start."""
    book = _book(name)
    parts = CORRECT[name]
    assert book.index["criteria"] == [c.id for c in RUBRIC.criteria if c.deliverable in parts]
    grade = grade_of(book, RUBRIC)  # by the brief it was written to: what that brief never stated is out of it
    # recorded as graded (AS_GRADED): a criterion a busy machine left to a person may stay so, never a fail
    undecided = ("passed", "inconclusive") if name in AS_GRADED else ("passed",)
    assert {c.id: c.output for c in grade.criteria if c.status not in undecided and c.weight > 0} == {}
    if name not in AS_GRADED:
        assert grade.score == grade.max_score


@pytest.mark.parametrize("name", sorted(CHAFF))
def test_each_chaffs_records_lose_exactly_its_targets(name: str) -> None:
    book = _book(name)
    if CHAFF[name].scores_nothing:  # the untouched starter: nothing on any criterion
        grade = grade_of(book, RUBRIC)
        assert book.index["criteria"] == [c.id for c in RUBRIC.criteria]
        assert {c.id: c.output[:200] for c in grade.criteria if c.score > 0} == {}
        assert all(c.status != "passed" for c in grade.criteria if c.weight > 0)
        return
    targets = set(CHAFF[name].targets)
    judged = set(book.index["criteria"])
    assert targets <= judged, f"{name}: the records do not cover {sorted(targets - judged)}"
    grade = grade_of(book, RUBRIC)
    kept = [c.id for c in grade.criteria if c.id in targets and kept_target(c)]
    lost = {c.id: c.output for c in grade.criteria if c.id not in targets and c.status != "passed"}
    assert not kept, f"{name} keeps its target(s) {kept}"
    assert not lost, f"{name} loses criteria it does not target: {lost}"
