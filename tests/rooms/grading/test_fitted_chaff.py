"""A chaff fitted to the published runs (`unseen: true`) passes its targets on everything a candidate can run
and loses them only on the unseen material: judged from its recorded grade (tests/fixtures/runs/), once whole
and once with the unseen variants' runs and the unseen sizing inputs taken out, as `grader check` would have
seen it. A fitted chaff that lost a target on a public run would prove a public rule, not the draw."""

from __future__ import annotations

import pytest
from recorded import FIXTURES, ROOT

from grader.grading.rejudge import grade_of
from grader.kit.chaff import Chaff, list_chaff
from grader.records.book import RecordBook
from grader.records.tests import DRAWN_NO_SLOTS, DRAWN_SERVER, UNSEEN_PERCENTILE
from grader.rubric import load_rubric

RUBRIC = load_rubric()
FITTED = [c for c in list_chaff(ROOT / "submissions" / "chaff") if c.unseen]


def _public_only(book: RecordBook) -> RecordBook:
    """The records a self-check makes: no variant's run, only the published sizing sets and inputs to refuse, and
    only the named wrong percentile methods swapped into the candidate's tests, and no drawn server."""
    for key in [k for k in book.records if ".v" in k.split("@")[0]]:
        del book.records[key]
    book.index["variants"] = {"count": 0, "gateway": False, "loadgen": []}
    sets, refuse = set(RUBRIC.sizing.sets), {r.name for r in RUBRIC.sizing.refuse}
    for record in book.records.values():
        if record["section"] == "sizing":
            record["sets"] = [s for s in record["sets"] if s["name"] in sets]
            record["refusals"] = [r for r in record.get("refusals", []) if r["name"] in refuse]
        if record["section"] == "tests":
            record["variants"] = [
                v
                for v in record["variants"]
                if not v["variant"].startswith(UNSEEN_PERCENTILE) and v["variant"] not in (DRAWN_SERVER, DRAWN_NO_SLOTS)
            ]
    return book


def test_there_are_fitted_chaff_for_the_gateway_the_load_generator_sizing_and_the_tests() -> None:
    assert {c.targets[0].split(".")[0] for c in FITTED} == {"gateway", "loadgen", "sizing", "tests"}


@pytest.mark.parametrize("chaff", FITTED, ids=[c.name for c in FITTED])
def test_a_fitted_chaff_loses_its_targets_only_on_what_the_candidate_never_ran(chaff: Chaff) -> None:
    whole = {r.id: r for r in grade_of(RecordBook.read(FIXTURES / chaff.name), RUBRIC).criteria}
    public = {r.id: r for r in grade_of(_public_only(RecordBook.read(FIXTURES / chaff.name)), RUBRIC).criteria}
    for target in chaff.targets:
        assert whole[target].status == "failed", f"{chaff.name} keeps {target} in its grade"
        assert public[target].status == "passed", (
            f"{chaff.name} loses {target} on the public runs: {public[target].output}"
        )
    assert {i for i, r in public.items() if r.status != "passed"} == set(), "a public criterion lost"
