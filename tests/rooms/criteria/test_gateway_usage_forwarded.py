"""TASK.md's answer on usage the gateway asked for (`continuous_usage_stats`): it may reach the client, because
what must hold is the content, its order and the ending. Judged from the reference's recorded gateway run with
a running usage object added to every streamed chunk, as vLLM sends it when asked: no gateway criterion moves."""

from __future__ import annotations

import json

from recorded import FIXTURES

from grader.grading.rejudge import grade_of
from grader.records.book import RecordBook
from grader.rubric import load_rubric


def _with_running_usage(book: RecordBook) -> int:
    """Add `usage` to every chunk of every streamed answer of the gateway's records; how many chunks changed."""
    changed = 0
    for record in book.records.values():
        if record["section"] != "gateway":
            continue
        for case in record["cases"]:
            for answer in case["answers"]:
                for n, event in enumerate(answer["events"]):
                    try:
                        chunk = json.loads(event[1])
                    except ValueError:
                        continue
                    if isinstance(chunk, dict) and chunk.get("choices"):
                        chunk["usage"] = {"prompt_tokens": 12, "completion_tokens": n, "total_tokens": 12 + n}
                        event[1] = json.dumps(chunk, separators=(",", ":"))
                        changed += 1
    return changed


def test_usage_on_every_chunk_reaching_the_client_moves_no_gateway_criterion() -> None:
    rubric = load_rubric()
    plain = {
        c.id: c.status
        for c in grade_of(RecordBook.read(FIXTURES / "reference"), rubric).criteria
        if c.deliverable == "gateway"
    }
    assert plain and set(plain.values()) == {"passed"}
    book = RecordBook.read(FIXTURES / "reference")
    assert _with_running_usage(book) > 100
    with_usage = {c.id: c.status for c in grade_of(book, rubric).criteria if c.deliverable == "gateway"}
    assert with_usage == plain
