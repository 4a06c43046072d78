"""Blind review (grader/round/blind.py): codes for names everywhere, stable, revealed only when asked, and a
person's checklist points recorded on a blind report carried back to the named one."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import pytest
from round_builder import write_report

from grader.cli.round_modes import echo_summary, run_human_score
from grader.round.blind import BLIND, CODES, BlindError, Redactor, codes_for
from grader.round.rebuild import SummaryOptions
from grader.round.sources import Deliverable, Sources, write_sources
from grader.round.summary import read_rows

PEOPLE = {"ada-okonkwo": "Ada Okonkwo", "ken-lindqvist": "Ken Lindqvist", "grace-o-brien": "Grace O'Brien"}


@pytest.fixture
def named_round(tmp_path: Path) -> Path:
    out = tmp_path / "grades"
    for i, (folder, person) in enumerate(PEOPLE.items()):
        report = write_report(
            out / folder,
            person,
            [
                ("memo.figures", "memo", 1, i % 2, "failed" if i % 2 == 0 else "passed"),
                ("loadgen.runs", "loadgen", 1, 1, "passed"),
            ],
            human=[("human.1", None, 3)],
        )
        text = (report / "report.html").read_text()  # a report quoting the candidate's own files
        (report / "report.html").write_text(
            text.replace("</body>", f"<pre>Written by {person} ({folder.replace('-', '.')}@example.org)</pre></body>")
        )
        (report / "grade.log").write_text(f"grading /returns/{folder}.zip\n")
        memo = f"# Memo\n\nAuthor: {person} Jr\n\nNumbers by {person.split()[0]}.\n"
        write_sources(Sources(person, {"memo": Deliverable("memo/MEMO.md", {"memo/MEMO.md": memo})}), report)
    return out


def _every_file(folder: Path) -> dict[Path, str]:
    return {p: p.read_text(encoding="utf-8") for p in sorted(folder.rglob("*")) if p.is_file()}


def test_the_blind_copy_names_nobody_and_its_codes_are_stable(named_round: Path) -> None:
    echo_summary(named_round, SummaryOptions(threshold=None, anonymize=True))
    blind = named_round / BLIND
    files = _every_file(blind)
    assert files, "no blind copy"
    names = [*PEOPLE, *PEOPLE.values(), "O&#x27;Brien", "Okonkwo", "Lindqvist", "example.org"]
    for path, text in files.items():
        for name in names:
            assert name.lower() not in text.lower(), f"{path} names {name}"
    codes = json.loads((named_round / CODES).read_text())
    assert sorted(codes) == sorted(PEOPLE)
    assert sorted(p.name for p in blind.iterdir() if p.is_dir()) == sorted(codes.values())
    assert {r["name"] for r in csv.DictReader((blind / "grades.csv").open())} == set(codes.values())
    assert "<mark>x</mark>" in (blind / codes["ada-okonkwo"] / "report.html").read_text()  # markup left whole
    assert not (blind / CODES).exists() and not list(blind.rglob("sources.json.gz"))
    assert not list(named_round.parent.glob("*.csv"))  # no map unless asked
    echo_summary(named_round, SummaryOptions(threshold=None, anonymize=True))
    assert json.loads((named_round / CODES).read_text()) == codes  # stable


def test_reveal_writes_the_map_only_when_asked(named_round: Path, tmp_path: Path) -> None:
    target = tmp_path / "names.csv"
    echo_summary(named_round, SummaryOptions(threshold=None, anonymize=True, reveal=target))
    codes = json.loads((named_round / CODES).read_text())
    rows = list(csv.DictReader(target.open()))
    assert {(r["code"], r["name"], r["candidate"]) for r in rows} == {(codes[f], f, p) for f, p in PEOPLE.items()}


def test_points_scored_on_a_blind_report_count_in_the_named_ranking(named_round: Path) -> None:
    echo_summary(named_round, SummaryOptions(threshold=None, anonymize=True))
    code = json.loads((named_round / CODES).read_text())["ken-lindqvist"]
    run_human_score(named_round / BLIND / code / "report.json", ["human.1=3/3"])
    echo_summary(named_round, SummaryOptions(threshold=None, anonymize=True))
    rows = {r.name: r for r in read_rows(named_round)}
    assert rows["ken-lindqvist"].human_score == 3
    blind_rows = {r["name"]: r for r in csv.DictReader((named_round / BLIND / "grades.csv").open())}
    assert blind_rows[code]["human_score"] == "3"


def test_the_redactor_spells_names_every_way_and_keeps_words_and_markup() -> None:
    redact = Redactor({"ada": {"Ada Okonkwo", "ada-okonkwo"}}, {"ada": "C-2345"})
    assert redact.text("By ADA OKONKWO, ada_okonkwo, AdaOkonkwo and Ada.") == "By C-2345, C-2345, C-2345 and C-2345."
    assert redact.text("<mark>adamant</mark> mail ada@x.org") == "<mark>adamant</mark> mail [email]"
    assert redact.named("still ada-okonkwo here") == ["ada-okonkwo"]


def test_the_redactor_reads_each_string_as_one_pattern_of_every_name_would() -> None:
    """Each string is matched only against the names whose first token it holds, in lower case: the same text out
    as one pattern of every name, any case, over the whole string (the definition), on strings built of the
    names' tokens, other words, separators, a longer name sharing a shorter one's start and a character whose
    lower case is longer (the fallback)."""
    import random
    import re

    from grader.round.blind import _TOKEN, _full_names

    names = {"ada": {"Ada Okonkwo", "ada-okonkwo"}, "adam": {"Ada Okonkwo-Smith"}, "ken": {"Ken Lindqvist", "KL"}}
    codes = {"ada": "C-AAAA", "adam": "C-BBBB", "ken": "C-KKKK"}
    redact = Redactor(names, codes)
    pieces = [
        "Ada",
        "ADA",
        "ada",
        "Okonkwo",
        "okonkwo",
        "Smith",
        "Ken",
        "LINDQVIST",
        "KL",
        "adamant",
        "x",
        "İ",
        "<b>",
        "9",
    ]
    separators = [" ", "-", "_", "", "  ", "--_-", ".", "\n"]
    rng = random.Random(7)
    for _ in range(3000):
        text = "".join(rng.choice(pieces) + rng.choice(separators) for _ in range(rng.randint(1, 8)))
        full = {
            "".join(_TOKEN.findall(s)).lower(): codes[w]
            for w, ss in names.items()
            for s in ss
            if len(_TOKEN.findall(s)) > 1
        }

        def full_code(m: re.Match[str], full: dict[str, str] = full) -> str:
            return full["".join(_TOKEN.findall(m.group())).lower()]

        expected = _full_names(tuple(redact._alternatives)).sub(full_code, text)
        parts = re.compile(r"(?<![^\W_])(?:" + "|".join(map(re.escape, redact._part_names)) + r")(?![^\W_])")
        expected = parts.sub(lambda m: redact._parts[m.group()], expected)
        assert redact.text(text) == expected, text
    assert re.fullmatch(r"C-BBBB and C-AAAA", redact.text("ada okonkwo-smith and ADA_OKONKWO"))


def test_a_long_run_of_word_characters_is_read_once() -> None:
    """A page's data URI is a run of 100,000 word characters: an address is looked for from its start only
    (tried from each of its characters it took minutes), and found after it."""
    import time

    redact = Redactor({"ada": {"Ada Okonkwo"}}, {"ada": "C-2345"})
    started = time.monotonic()
    out = redact.text("data:image/png;base64," + "Qk" * 50_000 + " by ada.okonkwo+x@mail.example.org")
    assert out.endswith(" by [email]") and time.monotonic() - started < 5


def test_an_unreadable_codes_file_is_one_line_naming_it(tmp_path: Path) -> None:
    (tmp_path / CODES).write_text("[1, 2]")
    with pytest.raises(BlindError, match=r"\.blind-codes\.json: cannot be read"):
        codes_for(tmp_path, ["x"])
