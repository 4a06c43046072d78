"""`grader review` over HTTP, without a browser: what a save writes is what `grader human-score` writes, garbage
is a 400 naming the field (never a 5xx), two saves on one version are one save and a refusal naming who saved,
files are served from the round's folder alone, the token, the Host check, blind answers, the export, and bad
command lines in one line.

The round is tests/round_builder.py's first three members, re-judged from recorded runs (no live grading).
"""

from __future__ import annotations

import csv
import json
import re
import shutil
import socket
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from click.testing import CliRunner
from round_builder import summarised_round

from grader.cli import main
from grader.review.blinding import REVEALS
from grader.review.guide import ensure_guide
from grader.review.server import Running, prepare, start
from grader.review.sheet import LOCK_FILE, REVIEW_FILE
from grader.round.blind import CODES

JSON = {"Accept": "application/json"}


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, object]]:
    """The round, each candidate's guide built (as their page's first visit builds it)."""
    grades, members = summarised_round(tmp_path_factory.mktemp("round"), similarity=False)
    for name in members:
        assert ensure_guide(grades / name) is None
    return grades, dict(members)


@pytest.fixture(scope="module")
def shared(built: tuple[Path, dict[str, object]]) -> Iterator[httpx.Client]:
    """One app on the built round, for the tests that write nothing."""
    running = start(prepare(built[0], reviewer="alice"))
    with httpx.Client(base_url=running.url, timeout=60) as client:
        yield client
    running.stop()


@pytest.fixture
def grades(built: tuple[Path, dict[str, object]], tmp_path: Path) -> Path:
    """A fresh copy of the round for each test: what one test saves is not another's premise."""
    copy = tmp_path / "grades"
    shutil.copytree(built[0], copy, symlinks=True)
    return copy


@pytest.fixture
def app(grades: Path) -> Iterator[tuple[httpx.Client, Running]]:
    running = start(prepare(grades, reviewer="alice"))
    with httpx.Client(base_url=running.url, timeout=60) as client:
        yield client, running
    running.stop()


def _sheet(client: httpx.Client, key: str) -> tuple[str, list[str]]:
    page = client.get(f"/c/{key}")
    assert page.status_code == 200, page.text
    version = re.search(r"name=version value='([^']+)'", page.text)
    assert version, "no sheet on the page"
    return version.group(1), re.findall(r"name='score:([^']+)'", page.text)


def _form(version: str, lines: list[str]) -> dict[str, str]:
    """The sheet's form as the page posts it, nothing scored."""
    form = {"version": version, "reviewer": "", "decision": "", "reason": ""}
    for line in lines:
        form[f"score:{line}"] = ""
        form[f"note:{line}"] = ""
    return form


@pytest.mark.slow
@pytest.mark.rotating(7)
def test_a_save_writes_what_human_score_writes_and_the_export_carries_it(
    app: tuple[httpx.Client, Running], grades: Path, tmp_path: Path
) -> None:
    client, _ = app
    version, lines = _sheet(client, "ada-okonkwo")
    assert lines[:2] == ["interview.1", "interview.2"]
    twin = tmp_path / "twin"
    shutil.copytree(grades / "ada-okonkwo", twin)  # the guide is built: the same report, before any point
    form = _form(version, lines)
    form.update(
        {
            "score:interview.1": "2",
            "score:interview.2": "3",
            "note:interview.1": "explained the slot wait",
            "decision": "advance",
            "reason": "strong on the gateway",
        }
    )
    saved = client.post("/c/ada-okonkwo/sheet", data=form, headers=JSON)
    assert saved.status_code == 200, saved.text
    assert saved.json()["version"] != version and "alice" in saved.json()["message"]
    done = CliRunner().invoke(main, ["human-score", str(twin / "report.json"), "interview.1=2/3", "interview.2=3/3"])
    assert done.exit_code == 0, done.output
    for name in ("report.json", "report.html"):
        assert (grades / "ada-okonkwo" / name).read_bytes() == (twin / name).read_bytes(), name
    review = json.loads((grades / "ada-okonkwo" / REVIEW_FILE).read_text())
    assert review["notes"] == {"interview.1": "explained the slot wait"}
    assert review["decision"]["decision"] == "advance" and review["decision"]["by"] == "alice"
    assert not [p for p in (grades / "ada-okonkwo").iterdir() if p.name.endswith(".tmp")]
    exported = client.post("/export")
    assert exported.status_code == 200 and "attachment" in exported.headers["content-disposition"]
    rows = {r["name"]: r for r in csv.DictReader((grades / "grades.csv").open())}
    assert exported.text == (grades / "grades.csv").read_text()
    assert rows["ada-okonkwo"]["interview_score"] == "5"
    assert (rows["ada-okonkwo"]["decision"], rows["ada-okonkwo"]["decision_reason"]) == (
        "advance",
        "strong on the gateway",
    )
    assert rows["grace-lindqvist"]["decision"] == ""
    # the same summary writer: the columns grade-many writes, in its order, the two added before the criteria
    header = next(csv.reader((grades / "grades.csv").open()))
    after = header.index("fits")  # the grade's seed, edition, contract and edition fit, then the two added
    assert header[after + 1 : after + 3] == ["decision", "decision_reason"]


GARBAGE = [
    ({"score:interview.1": "4"}, "score:interview.1: '4' is not a score from 0 to 3"),
    ({"score:interview.1": "two"}, "score:interview.1: 'two' is not a score"),
    ({"score:interview.1": "-1"}, "score:interview.1"),
    ({"score:interview.1": "2.5"}, "score:interview.1"),
    ({"score:interview.1": "NaN"}, "score:interview.1"),
    ({"note:interview.2": "x" * 5000}, "note:interview.2: 5000 characters; at most 4000"),
    ({"note:interview.2": "a\x00b"}, "note:interview.2: holds a control character"),
    ({"decision": "maybe"}, "decision: 'maybe' is not one of advance, hold, reject"),
    ({"decision": "reject"}, "reason: a decision needs its reason"),
    ({"reason": "y" * 9000}, "reason: 9000 characters"),
    ({"reviewer": "r" * 200}, "reviewer: 200 characters"),
    ({"version": ""}, "version: missing"),
    ({"version": "../../x"}, "version: not a version"),
    ({"no_such": "1"}, "no_such: no such field"),
]


@pytest.mark.parametrize(
    ("change", "message"), GARBAGE, ids=[m.split(":")[0] + "-" + str(i) for i, (_, m) in enumerate(GARBAGE)]
)
def test_garbage_is_refused_with_a_message_naming_the_field(
    shared: httpx.Client, built: tuple[Path, dict[str, object]], change: dict[str, str], message: str
) -> None:
    client, grades = shared, built[0]
    version, lines = _sheet(client, "grace-lindqvist")
    before = (grades / "grace-lindqvist" / "report.json").read_bytes()
    form = {**_form(version, lines), **change}
    answer = client.post("/c/grace-lindqvist/sheet", data=form, headers=JSON)
    assert answer.status_code == 400, answer.text
    assert message in answer.json()["message"]
    page = client.post("/c/grace-lindqvist/sheet", data=form)  # the form posted without the script: a page
    assert page.status_code == 400 and message.split(":")[0] in page.text and "<html" in page.text
    assert (grades / "grace-lindqvist" / "report.json").read_bytes() == before
    assert not (grades / "grace-lindqvist" / REVIEW_FILE).exists()


def test_malformed_requests_are_4xx_never_5xx(shared: httpx.Client) -> None:
    client = shared
    version, lines = _sheet(client, "grace-lindqvist")
    form = _form(version, lines)
    missing = dict(form)
    del missing["score:interview.3"]
    cases = [
        client.post("/c/grace-lindqvist/sheet", data=missing, headers=JSON),
        client.post(
            "/c/grace-lindqvist/sheet",
            content=b"\xff\xfe=\x00",
            headers={**JSON, "Content-Type": "application/x-www-form-urlencoded"},
        ),
        client.post(
            "/c/grace-lindqvist/sheet",
            content=b"version=" + b"a" * 300_000,
            headers={**JSON, "Content-Type": "application/x-www-form-urlencoded"},
        ),
        client.post("/c/grace-lindqvist/sheet", json={"version": version}, headers=JSON),
        client.post(
            "/c/grace-lindqvist/sheet",
            content="&".join(["a=1"] * 3000),
            headers={**JSON, "Content-Type": "application/x-www-form-urlencoded"},
        ),
        client.post(
            "/c/grace-lindqvist/sheet",
            content=urlencode_twice(form),
            headers={**JSON, "Content-Type": "application/x-www-form-urlencoded"},
        ),
        client.post("/c/nobody/sheet", data=form, headers=JSON),
        client.post("/c/grace-lindqvist/live", data={"exercise": "no-such-exercise"}, headers=JSON),
        client.post("/c/grace-lindqvist/live", data={}, headers=JSON),
        client.get("/c/grace-lindqvist/live/nope?since=x", headers=JSON),
        client.post("/c/grace-lindqvist/reveal", data={}, headers=JSON),
        client.get("/c/%00"),
        client.get("/no/such/page"),
        client.put("/c/grace-lindqvist/sheet"),
    ]
    for answer in cases:
        assert 400 <= answer.status_code < 500, (answer.request.url, answer.status_code, answer.text[:300])
    assert "score:interview.3: missing" in cases[0].json()["message"]
    assert "larger than 256 KiB" in cases[2].json()["message"]
    assert "URL-encoded" in cases[3].json()["message"]


def urlencode_twice(form: dict[str, str]) -> str:
    from urllib.parse import urlencode

    pairs = list(form.items())
    return urlencode(pairs + pairs[:1])  # `version` given twice


@pytest.mark.slow
@pytest.mark.rotating(4)
def test_two_saves_on_one_version_are_one_save_and_a_refusal_naming_who_saved(grades: Path) -> None:
    alice, bob = start(prepare(grades, reviewer="alice")), start(prepare(grades, reviewer="bob"))
    try:
        with httpx.Client(base_url=alice.url, timeout=60) as a, httpx.Client(base_url=bob.url, timeout=60) as b:
            version, lines = _sheet(a, "alan-marchetti")
            assert _sheet(b, "alan-marchetti")[0] == version
            first = a.post(
                "/c/alan-marchetti/sheet", data={**_form(version, lines), "score:interview.1": "1"}, headers=JSON
            )
            assert first.status_code == 200, first.text
            second = b.post(
                "/c/alan-marchetti/sheet", data={**_form(version, lines), "score:interview.2": "3"}, headers=JSON
            )
            assert second.status_code == 409
            assert re.match(r"alice saved this sheet at \d\d:\d\d:\d\d UTC", second.json()["message"])
            checklist = json.loads((grades / "alan-marchetti" / "report.json").read_text())["extra_data"]["human"][
                "checklist"
            ]
            scored = {e["id"]: e["score"] for e in checklist if e["score"] is not None}
            assert scored == {"interview.1": 1.0}
            # a recorded score left empty on the current version: refused, naming the field
            version = _sheet(b, "alan-marchetti")[0]
            cleared = b.post("/c/alan-marchetti/sheet", data=_form(version, lines), headers=JSON)
            assert (
                cleared.status_code == 400
                and "score:interview.1: a recorded score can be changed but not cleared" in cleared.json()["message"]
            )
            # a change made with grader human-score meanwhile is named as such
            version = _sheet(b, "alan-marchetti")[0]
            done = CliRunner().invoke(
                main, ["human-score", str(grades / "alan-marchetti" / "report.json"), "interview.3=2/3"]
            )
            assert done.exit_code == 0, done.output
            third = b.post(
                "/c/alan-marchetti/sheet", data={**_form(version, lines), "score:interview.1": "1"}, headers=JSON
            )
            assert third.status_code == 409 and "outside this page (grader human-score" in third.json()["message"]
    finally:
        alice.stop()
        bob.stop()
    assert (grades / "alan-marchetti" / LOCK_FILE).is_file()


def _linked_name(row: str) -> str:
    """The candidate an index row links to."""
    found = re.search(r"href='/c/([^']+)'", row)
    assert found is not None, row  # every row of the index links its candidate's page
    return found.group(1)


def test_the_edition_a_grade_records_is_shown_and_a_dash_where_none(
    app: tuple[httpx.Client, Running], grades: Path
) -> None:
    client, _ = app
    for name in ("ada-okonkwo", "alan-marchetti"):  # graded before grades recorded their edition
        report = grades / name / "report.json"
        data = json.loads(report.read_text())
        data["extra_data"]["kit"].pop("edition", None)
        report.write_text(json.dumps(data))
    report = grades / "grace-lindqvist" / "report.json"
    data = json.loads(report.read_text())
    data["extra_data"]["kit"]["edition"] = {"name": "2025-spring", "contract": "1", "kit": "0.1.0"}
    report.write_text(json.dumps(data))
    with (grades / "grades.csv").open() as handle:  # the summary's edition columns name another for one of them
        rows = list(csv.DictReader(handle))
    header = list(dict.fromkeys([*rows[0], "edition", "contract"]))
    with (grades / "grades.csv").open("w", newline="") as handle:
        writer = csv.DictWriter(handle, header)
        writer.writeheader()
        writer.writerows(
            {**r, "edition": "2024-autumn" if r["name"] == "ada-okonkwo" else "", "contract": "1"} for r in rows
        )
    shown = {_linked_name(row): row for row in client.get("/").text.split("<tr data-decision")[1:]}
    assert "title='contract 1, 0.1.0'>2025-spring<" in shown["grace-lindqvist"]  # report.json's, first
    assert ">2024-autumn<" in shown["ada-okonkwo"]  # grades.csv's, where report.json records none
    assert "<td>—</td>" in shown["alan-marchetti"]
    assert "Edition <b>2025-spring</b>" in client.get("/c/grace-lindqvist").text


def test_files_come_from_the_round_alone(app: tuple[httpx.Client, Running], grades: Path, tmp_path: Path) -> None:
    client, running = app
    secret = tmp_path / "secret.txt"
    secret.write_text("not the round's")
    (grades / "ada-okonkwo" / "leak.html").symlink_to(secret)
    (grades / "linked").symlink_to(tmp_path)
    assert client.get("/files/ada-okonkwo/report.html").status_code == 200
    for path, status in [
        ("/files/ada-okonkwo/leak.html", 403),
        ("/files/linked/secret.txt", 403),
        ("/files/..%2Fsecret.txt", 404),
        ("/files/ada-okonkwo%2F..%2F..%2Fsecret.txt", 404),
        ("/files/%2e%2e/secret.txt", 404),
        ("/files//etc/passwd", 404),
        ("/files/.blind-codes.json", 404),
        (f"/files/ada-okonkwo/{LOCK_FILE}", 404),
        ("/files/ada-okonkwo", 404),
        ("/files/ada-okonkwo/..\\..\\secret.txt", 404),
    ]:
        answer = client.get(path)
        assert answer.status_code == status, (path, answer.status_code)
        assert "not the round's" not in answer.text and "root:" not in answer.text
    # the raw request line, as no client normalises it
    host, port = running.url.split("//")[1].rstrip("/").split(":")
    with socket.create_connection((host, int(port)), timeout=10) as sock:
        sock.sendall(
            f"GET /files/../../../../{secret} HTTP/1.1\r\nHost: {host}:{port}\r\nConnection: close\r\n\r\n".encode()
        )
        raw = b""
        while chunk := sock.recv(65536):
            raw += chunk
    assert raw.split(b" ")[1] in (b"404", b"400") and b"not the round's" not in raw


def test_loopback_answers_its_own_address_and_refuses_other_origins(shared: httpx.Client) -> None:
    client = shared
    assert client.get("/", headers={"Host": "evil.example:80"}).status_code == 403  # DNS rebinding
    version, lines = _sheet(client, "grace-lindqvist")
    answer = client.post(
        "/c/grace-lindqvist/sheet", data=_form(version, lines), headers={**JSON, "Origin": "http://evil.example"}
    )
    assert answer.status_code == 403


@pytest.mark.slow
@pytest.mark.rotating(1)
def test_another_address_asks_for_the_token_printed_at_start(grades: Path) -> None:
    served = prepare(grades, host="0.0.0.0", reviewer="alice")  # every address; reached here on loopback
    assert served.token and f"?token={served.token}" in served.url
    running = start(served)
    port = served.sock.getsockname()[1]
    base = f"http://127.0.0.1:{port}"
    try:
        with httpx.Client(base_url=base, timeout=60) as client:
            for path in ("/", "/c/ada-okonkwo", "/files/ada-okonkwo/report.json", "/static/review.js"):
                refused = client.get(path)
                assert refused.status_code == 401 and "Ada" not in refused.text, path
            assert client.get("/?token=wrong").status_code == 401
            with httpx.Client(base_url=base, timeout=60, cookies={"grader_review": "wrong"}) as wrong:
                assert wrong.get("/").status_code == 401
            signed = client.get(f"/c/ada-okonkwo?token={served.token}")
            assert signed.status_code == 303 and signed.headers["location"] == "/c/ada-okonkwo"
            assert "HttpOnly" in signed.headers["set-cookie"] and "SameSite=Strict" in signed.headers["set-cookie"]
            assert client.get("/c/ada-okonkwo").status_code == 200  # the cookie now
    finally:
        running.stop()


@pytest.mark.slow
@pytest.mark.rotating(6)
def test_a_blind_review_answers_with_codes_and_records_a_reveal(grades: Path) -> None:
    running = start(prepare(grades, reviewer="alice", blind=True))
    names = ["ada", "okonkwo", "grace", "lindqvist", "alan", "marchetti", "example.org"]
    codes = json.loads((grades / CODES).read_text())
    try:
        with httpx.Client(base_url=running.url, timeout=60) as client:
            answers = [client.get("/"), client.get("/items"), client.post("/export")]
            for code in codes.values():
                answers += [
                    client.get(f"/c/{code}"),
                    client.get(f"/files/{code}/report.html"),
                    client.get(f"/files/{code}/report.json"),
                    client.get(f"/files/{code}/interview/guide.md"),
                ]
            answers.append(client.get("/files/index.html"))
            for answer in answers:
                assert answer.status_code == 200, (answer.request.url, answer.status_code)
                for name in names:
                    assert not re.search(rf"(?i)(?<![a-z]){re.escape(name)}(?![a-z])", answer.text), (
                        answer.request.url,
                        name,
                    )
            assert client.get("/c/ada-okonkwo").status_code == 404  # a name is no key
            assert client.get(f"/files/{codes['ada-okonkwo']}/sources.json.gz").status_code == 403  # binary: not shown
            revealed = client.post(f"/c/{codes['grace-lindqvist']}/reveal", data={"reviewer": "carol"})
            assert revealed.status_code == 303
            page = client.get(f"/c/{codes['grace-lindqvist']}")
            assert f"Grace Lindqvist ({codes['grace-lindqvist']})" in page.text
            assert "Okonkwo" not in client.get("/").text
    finally:
        running.stop()
    (line,) = (grades / REVEALS).read_text().splitlines()
    entry = json.loads(line)
    assert (entry["code"], entry["by"]) == (codes["grace-lindqvist"], "carol") and entry["at"]


def test_bad_command_lines_are_one_line_and_exit_2(tmp_path: Path, grades: Path) -> None:
    runner = CliRunner()
    for argv, said in [
        ([str(tmp_path / "missing")], "no such folder"),
        ([str(tmp_path)], "not a round"),
    ]:
        done = runner.invoke(main, ["review", *argv])
        assert done.exit_code == 2, done.output
        assert said in done.output and "Traceback" not in done.output
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        done = runner.invoke(main, ["review", str(grades), "--port", str(port)])
    assert done.exit_code == 2 and f"127.0.0.1:{port}: cannot listen there" in done.output, done.output
    broken = tmp_path / "broken"
    (broken / "someone").mkdir(parents=True)
    (broken / "someone" / "report.json").write_text("{")
    done = runner.invoke(main, ["review", str(broken)])
    assert done.exit_code == 2 and "report.json: not a grader report.json" in done.output, done.output
    done = runner.invoke(main, ["review", str(grades), "--export"])
    assert done.exit_code == 0 and done.output.strip().endswith("grades.csv"), done.output
