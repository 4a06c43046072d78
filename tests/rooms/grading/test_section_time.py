"""A criterion's time is its own: judging it and its own reruns. The runs every criterion of a section reads are
the section's, reported once (`section_s` in the run index, "the gateway section's runs: X s, shared by its
criteria" on the terminal), not charged to whichever criterion happened to need them first. Read from the
reference's recorded grade (tests/fixtures/runs/reference), where no criterion was rerun."""

from __future__ import annotations

import json

from recorded import FIXTURES

from grader.rubric import load_rubric


def test_the_sections_runs_are_reported_once_and_no_criterion_carries_them() -> None:
    index = json.loads((FIXTURES / "reference" / "index.json").read_text())
    sections, durations = index["section_s"], index["durations"]
    deliverable = {c.id: c.deliverable for c in load_rubric().criteria}
    for name in ("loadgen", "gateway", "tests"):
        assert sections[name] > 5, f"the {name} section's runs took {sections[name]} s: too short to tell"
        own = {cid: s for cid, s in durations.items() if deliverable.get(cid) == name}
        assert own and sum(own.values()) < sections[name] / 4, (name, sections[name], own)
