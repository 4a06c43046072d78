"""The checklist never crashes on malformed input: every field of the good manifests, in turn,
replaced by a value of the wrong type. (The schema check rejects such documents, but the
checklist still runs on them so one run reports every problem.)"""

from __future__ import annotations

import copy
from collections.abc import Iterator
from typing import Any

import pytest
from kit_paths import TESTS

from grader.manifests.checks import CHECKLIST, ManifestSet
from grader.manifests.loader import PathKey, load_text
from grader.manifests.workload import find_servers

GOOD = (TESTS / "fixtures" / "manifests" / "good.yaml").read_text()


def _paths(node: Any, path: PathKey = ()) -> Iterator[PathKey]:
    if path:
        yield path
    if isinstance(node, dict):
        for key, value in node.items():
            yield from _paths(value, (*path, key))
    elif isinstance(node, list):
        for i, value in enumerate(node):
            yield from _paths(value, (*path, i))


@pytest.mark.parametrize("wrong", ["x", [1], 7, None], ids=["string", "list", "number", "null"])
def test_wrong_types_anywhere_never_crash_the_checklist(wrong: Any) -> None:
    docs, _ = load_text(GOOD, "good.yaml")
    runs = 0
    for doc in docs:
        for path in list(_paths(doc.data)):
            node: Any = doc.data
            for key in path[:-1]:
                node = node[key]
            original, node[path[-1]] = node[path[-1]], copy.deepcopy(wrong)
            context = ManifestSet(docs, find_servers(docs))
            for check in CHECKLIST:
                assert check.run(context), f"{check.id} returned no finding with {path} = {wrong!r}"
            node[path[-1]] = original
            runs += 1
    assert runs > 100
