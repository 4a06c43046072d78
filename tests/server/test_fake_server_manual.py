"""`fake-server faults` and `fake-server fixture`, run as a candidate runs them, against what a running server
accepts: every fault kind the code knows with the fields it reads, every field a server takes in a rule, and
every keyword the `fake_server` fixture passes on."""

from __future__ import annotations

import inspect
import re
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import httpx
import pytest

from fake_server import RunningServer, serve
from fake_server.engine.faults import FAULT_KINDS, KINDS
from fake_server.manual import SERVE_KEYWORDS

BIN = Path(sys.executable).parent
#: A valid value for each field a rule may hold, chosen here (the server must take every one of them).
SAMPLE = {
    "status": 503,
    "message": "injected by the test",
    "retry_after": 2,
    "seconds": 0.25,
    "after_tokens": 3,
    "every": True,
    "requests": [2, 3],
    "rate": 0.5,
    "model": "fake-model",
}


def command(*args: str) -> str:
    done = subprocess.run([str(BIN / "fake-server"), *args], capture_output=True, text=True, timeout=60, check=False)
    assert done.returncode == 0 and not done.stderr, done.stderr
    return done.stdout


@pytest.fixture(scope="module")
def faults_text() -> str:
    return command("faults")


def kinds_section(text: str) -> dict[str, list[str]]:
    """kind -> the fields its `fields:` line names, from the command's output."""
    out, kind = {}, None
    for line in text.splitlines():
        if match := re.match(r"^  ([a-z_]+)\s{2,}", line):
            kind = match.group(1)
        elif kind and (match := re.match(r"^\s+fields: ([a-z_, ]+)", line)):
            out[kind] = [] if match.group(1).strip() == "none" else match.group(1).split(", ")
            kind = None
    return out


def fields_section(text: str) -> set[str]:
    rules = text.split("Fields of a rule:\n", 1)[1].split("\n\n", 1)[0]
    return set(re.findall(r"^  ([a-z_]+)\s", rules, re.MULTILINE))


def test_every_fault_kind_the_code_knows_is_listed_with_the_fields_it_reads(faults_text: str) -> None:
    listed = kinds_section(faults_text)
    assert list(listed) == list(FAULT_KINDS)
    assert listed == {kind.name: list(kind.params) for kind in KINDS}
    assert all(field in fields_section(faults_text) for fields in listed.values() for field in fields)


def test_the_fields_listed_are_those_a_running_server_takes_in_a_rule(faults_text: str) -> None:
    with serve(admin=True) as server:
        answer = httpx.post(server.base_url + "/admin/faults", json={"kind": "cut", "no_such_field": 1}, timeout=10)
    assert answer.status_code == 400
    known = re.search(r"known: ([a-z_, ]+)", answer.json()["error"]["message"])
    assert known is not None, answer.text
    assert fields_section(faults_text) == set(known.group(1).split(", "))


@pytest.mark.parametrize("kind", FAULT_KINDS)
def test_each_kind_with_the_fields_listed_for_it_is_taken_and_shown_back(kind: str, faults_text: str) -> None:
    rule = {"kind": kind, **{field: SAMPLE[field] for field in kinds_section(faults_text)[kind]}}
    with serve(admin=True) as server:
        put = httpx.put(server.base_url + "/admin/faults", json={"faults": [rule]}, timeout=10)
        shown = httpx.get(server.base_url + "/admin/faults", timeout=10).json()["faults"]
    assert put.status_code == 200, put.text
    assert [{k: v for k, v in r.items() if k in rule} for r in shown] == [rule]


def test_the_fixtures_manual_names_every_keyword_the_fixture_takes() -> None:
    text = command("fixture")
    named = set(re.findall(r"^\s+([a-z_]+)[=:]", text, re.MULTILINE))
    keywords = {p.name for p in inspect.signature(serve).parameters.values() if p.kind is not p.VAR_KEYWORD}
    assert keywords <= set(SERVE_KEYWORDS), "describe the new keyword of serve() in fake_server/manual.py"
    with serve(admin=True) as server:  # every setting, as a running server reports its own
        config = httpx.get(server.base_url + "/admin/config", timeout=10).json()
    settings = (set(config) - {"models"}) | {key for model in config["models"].values() for key in model}
    assert len(settings) > 30 and keywords | settings | {"models"} <= named
    for name in ("fake_server(", "fake_fleet(", "set_faults(", "ledger(", "openai_base_url"):
        assert name in text


def test_the_fixture_takes_the_keywords_its_manual_shows(fake_server: Callable[..., RunningServer]) -> None:
    server = fake_server(
        max_num_seqs=2,
        faults=[{"kind": "http_error", "status": 429, "requests": [1]}],
        models={"second-model": {"token_rate": 100}},
    )
    answer = httpx.post(
        server.openai_base_url + "/chat/completions",
        timeout=10,
        json={"model": "fake-model", "messages": [{"role": "user", "content": "hi"}], "max_tokens": 2},
    )
    assert answer.status_code == 429
    assert {m["id"] for m in httpx.get(server.openai_base_url + "/models", timeout=10).json()["data"]} >= {
        "fake-model",
        "second-model",
    }
