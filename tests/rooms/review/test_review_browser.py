"""`grader review` in a real browser: Debian's Chromium driven by Selenium through Debian's chromedriver.

A sheet scored in the page lands where `grader human-score` writes (report.json) and in the export
(grades.csv); a reload keeps it, and so does a crash of the server with typing not yet saved; two reviewers
on one candidate: the second save is refused with who saved first, and what they typed stays; a blind round
shows no name until one is revealed (recorded); a live exercise shows its progress, then its verdict; a path
out of the round is refused. The round page and a candidate page are photographed at 1280x800 (with
REVIEW_SCREENSHOTS=FOLDER, into that folder: docs/images/ holds the ones docs/interview.md shows).

The round is tests/round_builder.py's first three members (the reference, the independent submission and a
renamed copy of the reference, flagged as similar), re-judged from recorded runs; the live exercise is the
pool's shortest, run for real in the sandbox.
"""

from __future__ import annotations

import csv
import json
import os
import re
import shutil
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Literal, TypeVar

import httpx
import pytest
from chromium import CHROMIUM, png_pixels
from round_builder import summarised_round

from grader.review.blinding import REVEALS
from grader.review.server import Running, prepare, start
from grader.round.blind import CODES

CHROMEDRIVER = shutil.which("chromedriver")
pytestmark = pytest.mark.skipif(
    CHROMIUM is None or CHROMEDRIVER is None,
    reason="Debian chromium and chromium-driver are not installed (apt-get install chromium chromium-driver; "
    ".ci/run and make install them)",
)
webdriver = pytest.importorskip("selenium.webdriver", reason="selenium is not installed (the kit's test extra)")
from selenium.webdriver.common.by import By
from selenium.webdriver.remote.webdriver import WebDriver
from selenium.webdriver.remote.webelement import WebElement
from selenium.webdriver.support.ui import Select, WebDriverWait

T = TypeVar("T")
NAMES = ["Ada", "Okonkwo", "Grace", "Lindqvist", "Alan", "Marchetti", "example.org"]
LIVE_EXERCISE = "reasoning-stream-error"  # the pool's shortest: eight requests, two at a time


@pytest.fixture(scope="module")
def rounds(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """The round, and a copy of it made before anyone scored, for the blind review."""
    grades, _ = summarised_round(tmp_path_factory.mktemp("round"))
    blind = tmp_path_factory.mktemp("blind") / "grades"
    shutil.copytree(grades, blind)
    return {"named": grades, "blind": blind}


@pytest.fixture(scope="module")
def servers(rounds: dict[str, Path]) -> Iterator[dict[str, Running]]:
    """Alice's and Bob's `grader review` on the one round (each their own, as on a shared folder), and a blind one."""
    running = {
        "alice": start(prepare(rounds["named"], reviewer="alice")),
        "bob": start(prepare(rounds["named"], reviewer="bob")),
        "blind": start(prepare(rounds["blind"], reviewer="carol", blind=True)),
    }
    yield running
    for server in running.values():
        server.stop()


@pytest.fixture(scope="module")
def browser(tmp_path_factory: pytest.TempPathFactory) -> Iterator[WebDriver]:
    options = webdriver.ChromeOptions()
    options.binary_location = str(CHROMIUM)
    for arg in (
        "--headless=new",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-dev-shm-usage",
        "--hide-scrollbars",
        "--no-first-run",
        "--disable-extensions",
        "--disable-background-networking",
        "--window-size=1280,800",
        f"--user-data-dir={tmp_path_factory.mktemp('profile')}",
    ):
        options.add_argument(arg)
    driver = webdriver.Chrome(service=webdriver.ChromeService(executable_path=CHROMEDRIVER), options=options)
    driver.set_page_load_timeout(90)
    driver.execute_cdp_cmd(
        "Emulation.setDeviceMetricsOverride", {"width": 1280, "height": 800, "deviceScaleFactor": 1, "mobile": False}
    )
    yield driver
    driver.quit()


def _wait(
    driver: WebDriver,
    until: Callable[[WebDriver], Literal[False] | T],
    timeout: float = 30,
    what: str = "",
    poll: float = 0.1,
) -> T:
    return WebDriverWait(driver, timeout, poll_frequency=poll).until(until, what)


def _attribute(element: WebElement, name: str) -> str:
    """An attribute the page always sets on that element."""
    value = element.get_attribute(name)
    assert value is not None, f"no {name} on <{element.tag_name}>"
    return value


def _status(driver: WebDriver) -> tuple[str | None, str]:
    element = driver.find_element(By.ID, "sheet-status")
    return element.get_attribute("data-state"), element.text


def _saved(driver: WebDriver) -> str:
    return _wait(
        driver, lambda d: _status(d)[1] if _status(d)[0] == "saved" else False, what=f"saved: {_status(driver)}"
    )


def _choose(driver: WebDriver, line: str, points: str) -> None:
    Select(driver.find_element(By.NAME, f"score:{line}")).select_by_visible_text(points)


def _chosen(driver: WebDriver, line: str) -> str:
    return Select(driver.find_element(By.NAME, f"score:{line}")).first_selected_option.text


def _points(folder: Path) -> dict[str, tuple[float, float]]:
    checklist = json.loads((folder / "report.json").read_text())["extra_data"]["human"]["checklist"]
    return {e["id"]: (e["score"], e["max_score"]) for e in checklist if e["score"] is not None}


def _shot(driver: WebDriver, tmp_path: Path, name: str) -> None:
    path = tmp_path / name
    assert driver.save_screenshot(str(path))
    width, height, _ = png_pixels(path)
    assert (width, height) == (1280, 800)
    if target := os.environ.get("REVIEW_SCREENSHOTS"):
        Path(target).mkdir(parents=True, exist_ok=True)
        shutil.copy(path, Path(target) / name)


@pytest.mark.slow
@pytest.mark.rotating(38)
def test_the_round_opens_ranked_sortable_filterable_with_its_flags(
    browser: WebDriver, servers: dict[str, Running], tmp_path: Path
) -> None:
    browser.get(servers["alice"].url)
    table = browser.find_element(By.ID, "ranking")
    heads = [th.text for th in table.find_elements(By.CSS_SELECTOR, "thead th")]
    assert heads[:5] == ["#", "Candidate", "Score", "Automated", "Interview"]
    assert {"loadgen", "gateway", "memo", "Unseen variants", "Similarity", "Edition", "Decision"} <= set(heads)
    names = [a.text for a in table.find_elements(By.CSS_SELECTOR, "tbody td:nth-child(2) a")]
    assert sorted(names) == ["Ada Okonkwo", "Alan Marchetti", "Grace Lindqvist"]
    assert "default" in table.text  # the edition these grades record

    def judged(d: WebDriver) -> bool:
        d.refresh()
        return "being judged" not in d.find_element(By.ID, "ranking").text

    _wait(
        browser,
        judged,
        90,
        "the unseen variants' verdicts",
        poll=1,
    )
    _shot(browser, tmp_path, "review-round.png")
    table = browser.find_element(By.ID, "ranking")
    assert "passed" in table.text or "not passed" in table.text
    table.find_element(By.XPATH, ".//th[text()='Candidate']").click()
    assert [a.text for a in table.find_elements(By.CSS_SELECTOR, "tbody td:nth-child(2) a")] == sorted(names)
    browser.find_element(By.ID, "filter").send_keys("grace")
    shown = [r for r in table.find_elements(By.CSS_SELECTOR, "tbody tr") if r.is_displayed()]
    assert [r.find_element(By.CSS_SELECTOR, "td:nth-child(2)").text for r in shown] == ["Grace Lindqvist"]
    browser.find_element(By.LINK_TEXT, "Item analysis").click()
    assert "Item analysis:" in browser.find_element(By.TAG_NAME, "h1").text
    browser.get(servers["alice"].url)
    pair = browser.find_element(By.PARTIAL_LINK_TEXT, "Alan Marchetti: ")
    pair.click()
    assert "side by side" in browser.page_source.lower() or "<mark>" in browser.page_source


@pytest.mark.slow
@pytest.mark.rotating(14)
def test_a_sheet_scored_in_the_page_lands_where_human_score_writes_and_in_grades_csv(
    browser: WebDriver, servers: dict[str, Running], rounds: dict[str, Path], tmp_path: Path
) -> None:
    folder = rounds["named"] / "ada-okonkwo"
    browser.get(servers["alice"].url + "c/ada-okonkwo")
    assert _attribute(browser.find_element(By.ID, "reader"), "src").endswith("/interview/guide.html")
    _choose(browser, "interview.1", "2")
    browser.find_element(By.NAME, "note:interview.1").send_keys("walked through the slot wait")
    _choose(browser, "interview.2", "3")
    browser.find_element(By.CSS_SELECTOR, "input[name=decision][value=advance]").click()
    browser.find_element(By.NAME, "reason").send_keys("clear on batching and fallbacks")
    _wait(browser, lambda d: _status(d)[0] == "saved" and "decision: advance" in _status(d)[1], what="saved")
    assert _points(folder) == {"interview.1": (2, 3), "interview.2": (3, 3)}
    assert browser.find_element(By.ID, "interview-points").text == "5 / 6"
    review = json.loads((folder / "review.json").read_text())
    assert review["notes"] == {"interview.1": "walked through the slot wait"} and review["saved_by"] == "alice"
    browser.execute_script("document.querySelector('main.desk > section.side').scrollTop = 0")
    # docs/ ships in the candidate's bundle, and the question bank never does: the picture shows where the
    # questions go, not their text
    browser.execute_script(
        "document.querySelectorAll('table.sheet .item').forEach(function (e, i) {"
        "  e.textContent = 'Question ' + (i + 1) + ' of the guide: its text is the bank\\'s, left out of this picture'; })"
    )
    _shot(browser, tmp_path, "review-candidate.png")
    browser.refresh()  # a reload keeps it: the server's sheet
    assert (_chosen(browser, "interview.1"), _chosen(browser, "interview.2")) == ("2", "3")
    assert browser.find_element(By.NAME, "note:interview.1").get_attribute("value") == "walked through the slot wait"
    assert browser.find_element(By.CSS_SELECTOR, "input[name=decision][value=advance]").is_selected()
    assert browser.execute_script("return Object.keys(localStorage).filter(k => k.indexOf(':ada-okonkwo') > 0)") == []
    exported = httpx.post(servers["alice"].url + "export", timeout=120)
    assert exported.status_code == 200
    row = next(r for r in csv.DictReader((rounds["named"] / "grades.csv").open()) if r["name"] == "ada-okonkwo")
    assert (row["interview_score"], row["decision"], row["decision_reason"]) == (
        "5",
        "advance",
        "clear on batching and fallbacks",
    )


@pytest.mark.slow
@pytest.mark.rotating(9)
def test_what_was_typed_while_the_server_was_down_is_saved_after_a_reload(
    browser: WebDriver, rounds: dict[str, Path]
) -> None:
    folder = rounds["named"] / "alan-marchetti"
    served = prepare(rounds["named"], reviewer="alice")
    port = served.sock.getsockname()[1]
    server = start(served)
    try:
        browser.get(server.url + "c/alan-marchetti")
        server.stop()  # the server crashes; the interviewer goes on typing
        _choose(browser, "interview.3", "1")
        browser.find_element(By.NAME, "note:interview.3").send_keys("unsure about the retry")
        _wait(browser, lambda d: _status(d)[0] == "error", what="the save failed")
        assert "stays in this browser" in _status(browser)[1]
        assert "interview.3" not in _points(folder)
        server = start(prepare(rounds["named"], port=port, reviewer="alice"))  # started again, same address
        browser.refresh()
        _saved(browser)
        assert _points(folder)["interview.3"] == (1, 3)
        assert browser.find_element(By.NAME, "note:interview.3").get_attribute("value") == "unsure about the retry"
    finally:
        server.stop()


@pytest.mark.slow
@pytest.mark.rotating(11)
def test_two_reviewers_the_second_save_is_refused_and_what_they_typed_stays(
    browser: WebDriver, servers: dict[str, Running], rounds: dict[str, Path]
) -> None:
    folder = rounds["named"] / "grace-lindqvist"
    browser.get(servers["alice"].url + "c/grace-lindqvist")
    alice = browser.current_window_handle
    browser.switch_to.new_window("tab")
    browser.get(servers["bob"].url + "c/grace-lindqvist")
    bob = browser.current_window_handle
    try:
        browser.switch_to.window(alice)
        _choose(browser, "interview.1", "3")
        _saved(browser)
        browser.switch_to.window(bob)
        _choose(browser, "interview.2", "1")
        _state, text = _wait(browser, lambda d: _status(d) if _status(d)[0] == "conflict" else False, what="a conflict")
        assert re.match(r"alice saved this sheet at \d\d:\d\d:\d\d UTC on \d{4}-\d\d-\d\d, after you opened it", text)
        assert _chosen(browser, "interview.2") == "1"  # kept on the page
        assert _points(folder) == {"interview.1": (3, 3)}  # never silently overwritten
        browser.refresh()  # Bob sees Alice's points, and is offered his own back
        assert _chosen(browser, "interview.1") == "3"
        browser.find_element(By.ID, "offer-mine").click()
        assert (_chosen(browser, "interview.1"), _chosen(browser, "interview.2")) == ("3", "1")
        browser.find_element(By.ID, "sheet-save").click()
        _saved(browser)
        assert _points(folder) == {"interview.1": (3, 3), "interview.2": (1, 3)}
        assert json.loads((folder / "review.json").read_text())["saved_by"] == "bob"
    finally:
        browser.close()
        browser.switch_to.window(alice)


@pytest.mark.slow
@pytest.mark.rotating(25)
def test_a_blind_round_shows_no_name_until_one_is_revealed(
    browser: WebDriver, servers: dict[str, Running], rounds: dict[str, Path]
) -> None:
    base = servers["blind"].url
    codes = json.loads((rounds["blind"] / CODES).read_text())

    def nameless(where: str) -> None:
        text = browser.page_source
        for name in NAMES:
            assert not re.search(rf"(?i)(?<![a-z]){re.escape(name)}(?![a-z])", text), f"{where} names {name}"

    browser.get(base)
    nameless("the round page")
    keys = [
        _attribute(a, "href").rsplit("/", 1)[1]
        for a in browser.find_elements(By.CSS_SELECTOR, "#ranking td a")
        if "/c/" in _attribute(a, "href")
    ]
    assert sorted(keys) == sorted(codes.values())
    documents = {_attribute(browser.find_element(By.PARTIAL_LINK_TEXT, "in 4 deliverables"), "href")}  # a pair
    for key in keys:
        browser.get(base + f"c/{key}")
        nameless(f"{key}'s page")
        documents |= {_attribute(a, "href") for a in browser.find_elements(By.CSS_SELECTOR, ".tabs a")}
    browser.get(base + "items")
    nameless("the item analysis")
    documents.add(base + "files/index.html")
    for url in sorted(documents):
        browser.get(url)
        assert "404" not in browser.title and "403" not in browser.title, url
        nameless(url)
    code = codes["grace-lindqvist"]
    browser.get(base + f"c/{code}")
    browser.find_element(By.CSS_SELECTOR, "#reveal button").click()
    alert = _wait(browser, lambda d: d.switch_to.alert, what="the confirmation")
    assert "recorded" in alert.text
    alert.accept()
    _wait(browser, lambda d: "Grace Lindqvist" in d.find_element(By.TAG_NAME, "h1").text, what="the name revealed")
    entry = json.loads((rounds["blind"] / REVEALS).read_text().splitlines()[-1])
    assert (entry["code"], entry["by"]) == (code, "carol") and entry["at"]
    browser.get(base)
    assert "Grace Lindqvist" in browser.page_source and "Okonkwo" not in browser.page_source


@pytest.mark.slow
@pytest.mark.rotating(6)
def test_a_live_exercise_shows_its_progress_then_its_verdict_and_is_recorded(
    browser: WebDriver, servers: dict[str, Running], rounds: dict[str, Path]
) -> None:
    folder = rounds["named"] / "ada-okonkwo"
    browser.get(servers["alice"].url + "c/ada-okonkwo")
    Select(browser.find_element(By.NAME, "exercise")).select_by_value(LIVE_EXERCISE)
    browser.find_element(By.ID, "live-start").click()
    state = browser.find_element(By.ID, "live-state")
    _wait(browser, lambda d: state.get_attribute("data-state") != "idle", what="the run started")
    _wait(browser, lambda d: "tell the candidate:" in d.find_element(By.ID, "live-log").text, 60, "progress lines")
    _wait(browser, lambda d: state.get_attribute("data-state") in ("passed", "failed", "error"), 240, "a verdict")
    assert state.get_attribute("data-state") == "passed", state.text + browser.find_element(By.ID, "live-log").text
    assert state.text.startswith(f"PASSED 4/4: {LIVE_EXERCISE}, run 1")
    assert "PASSED 4/4" in browser.find_element(By.ID, "live-log").text
    log = json.loads((folder / "live" / LIVE_EXERCISE / "live.json").read_text())
    assert [r["run"] for r in log["runs"]] == [1] and set(log["runs"][0]["statuses"].values()) == {"passed"}
    assert (folder / "live" / LIVE_EXERCISE / "run-1" / "runs" / "rubric.yaml").is_file()  # as `grader live` keeps it
    browser.find_element(By.ID, "live-report").click()
    browser.switch_to.window(browser.window_handles[-1])
    try:
        assert "loadgen.stream-error" in browser.page_source
    finally:
        browser.close()
        browser.switch_to.window(browser.window_handles[0])
    browser.refresh()
    assert LIVE_EXERCISE in browser.find_element(By.CSS_SELECTOR, "table.runs").text


@pytest.mark.slow
@pytest.mark.rotating(1)
def test_a_path_out_of_the_round_is_refused(
    browser: WebDriver, servers: dict[str, Running], rounds: dict[str, Path], tmp_path: Path
) -> None:
    secret = tmp_path / "secret.html"
    secret.write_text("<p>not the round's</p>")
    (rounds["named"] / "grace-lindqvist" / "notes.html").symlink_to(secret)
    base = servers["alice"].url
    for path, status in [
        ("files/..%2F..%2F..%2F..%2Fetc%2Fpasswd", "404"),
        (f"files/grace-lindqvist%2F..%2F..%2F..%2F..{secret}", "404"),
        ("files/grace-lindqvist/notes.html", "403"),
        ("files/.blind-codes.json", "404"),
    ]:
        browser.get(base + path)
        assert browser.find_element(By.TAG_NAME, "h1").text == status, path
        assert "root:" not in browser.page_source and "not the round's" not in browser.page_source
