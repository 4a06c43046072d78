"""A run's key is written and read by `RunKey` alone: every key a recorded grade holds reads back to the same
text and the same file name, and what the sections ask for is what they run."""

from __future__ import annotations

import gzip
import json

import pytest
from kit_paths import ROOT

from grader.grading.sections import NO_VARIANTS, SECTIONS
from grader.records.keys import RunKey, RunKeyError
from grader.rubric import Criterion

FIXTURES = ROOT / "tests" / "fixtures" / "runs"


def _recorded_keys() -> list[tuple[str, str]]:
    """Every record's file name and key, in every recorded grade the kit keeps."""
    return [
        (path.name, json.loads(gzip.decompress(path.read_bytes()))["key"])
        for path in sorted(FIXTURES.rglob("*.json.gz"))
    ]


def test_every_recorded_key_reads_back_to_itself_and_its_file() -> None:
    keys = _recorded_keys()
    # the unseen variants' keys among them; a recorded rerun is the machine's luck, so reruns are the sections' below
    assert any(".v1" in key for _, key in keys)
    for file, key in keys:
        parsed = RunKey.parse(key)
        assert str(parsed) == key
        assert parsed.file_name() == file


def test_the_parts_of_each_kind_of_key() -> None:
    assert RunKey.parse("loadgen/baseline") == RunKey("loadgen", "baseline")
    assert RunKey.parse("loadgen/multi-token.v2@2") == RunKey("loadgen", "multi-token", 2, 2)
    assert RunKey.parse("tests@2/tests.slot-chaff") == RunKey("tests", attempt=2, criterion="tests.slot-chaff")
    assert RunKey.parse("gateway.v1@2/gateway.cap") == RunKey("gateway", "", 1, 2, "gateway.cap")
    assert RunKey.parse("loadgen/baseline.v3").name == "baseline.v3"
    assert RunKey.parse("gateway.v1").name == "gateway.v1" and RunKey.parse("memo").name == "memo"
    assert RunKey.parse("loadgen/baseline@2").is_rerun and not RunKey.parse("loadgen/baseline").is_rerun


@pytest.mark.parametrize("text", ["", "Loadgen/x", "loadgen/baseline@1", "loadgen/a@2@2", "tests@", "gateway.v0"])
def test_what_is_not_a_key_is_refused_naming_it(text: str) -> None:
    with pytest.raises(RunKeyError, match="is not a run key"):
        RunKey.parse(text)


def test_the_sections_keys_are_run_keys_for_every_attempt() -> None:
    criterion = Criterion(
        id="x.y", deliverable="loadgen", weight=1, text="", visibility="public", scenarios=("baseline", "cut")
    )
    varied = {**NO_VARIANTS, "count": 2, "loadgen": ["cut"], "gateway": True}
    for section in SECTIONS.values():
        for attempt in (1, 2):
            keys = (section.keys(criterion, attempt) or ()) + section.variant_keys(criterion, attempt, varied)
            for key in keys:
                parsed = RunKey.parse(key)
                assert parsed.section == section.name and parsed.attempt == attempt, key


def test_the_record_schema_takes_the_same_keys() -> None:
    """A record's schema (schemas/grader/run-record.schema.json) holds `key` to the grammar RunKey reads, so a
    record whose key RunKey refuses is refused as a record too, with the schema's message."""
    import re

    schema = json.loads((ROOT / "schemas" / "grader" / "run-record.schema.json").read_text())
    pattern = re.compile(schema["properties"]["key"]["pattern"])
    for _, key in _recorded_keys():
        assert pattern.search(key), key
    for bad in ["loadgen/baseline@1", "loadgen/baseline@10", "tests@0/x", "gateway.v0", "loadgen/a@2@2"]:
        assert not pattern.search(bad), bad
        with pytest.raises(RunKeyError):
            RunKey.parse(bad)
