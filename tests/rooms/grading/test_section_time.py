"""A criterion's time is that of what it was judged from: the runs it read (a run read by several criteria counts
for each), judging it, and its reruns. The section's runs are reported once besides (`section_s` in the run
index, "the gateway section's runs: X s, shared by its criteria" on the terminal), so no line reads "(0.0 s)"
for a criterion that read a run. Read from the reference's recorded grade (tests/fixtures/runs/reference)."""

from __future__ import annotations

import json

from recorded import FIXTURES

from grader.records.book import RecordBook
from grader.rubric import load_rubric


def test_a_criterion_takes_the_time_of_the_runs_it_read_and_the_section_is_reported_once() -> None:
    index = json.loads((FIXTURES / "reference" / "index.json").read_text())
    sections, durations = index["section_s"], index["durations"]
    deliverable = {c.id: c.deliverable for c in load_rubric().criteria}
    for name in ("loadgen", "gateway", "tests"):
        assert sections[name] > 5, f"the {name} section's runs took {sections[name]} s: too short to tell"
        own = {cid: s for cid, s in durations.items() if deliverable.get(cid) == name}
        assert own and all(s > 0 for s in own.values()), (name, own)
    records = RecordBook.read(FIXTURES / "reference").records
    baseline = sum(r["wall_s"] for k, r in records.items() if k.split("@")[0].split(".v")[0] == "loadgen/baseline")
    every = sum(r["wall_s"] for k, r in records.items() if k.startswith("loadgen/"))
    # loadgen.ttft reads the baseline run and its variants; loadgen.percentiles every run of the section
    assert baseline <= durations["loadgen.ttft"] < durations["loadgen.percentiles"]
    assert every <= durations["loadgen.percentiles"] <= every + sections["loadgen"]
