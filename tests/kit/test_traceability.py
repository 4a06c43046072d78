"""Every graded statement of the brief has a criterion, every criterion a chaff that loses it, and
docs/grading.md shows the table as it is."""

from __future__ import annotations

from pathlib import Path

from grader.kit.chaff import list_chaff
from grader.kit.traceability import ROOT, docs_table, problems, render, rows, statements
from grader.rubric import load_rubric
from grader.rubric.questions import load_questions

RUBRIC = load_rubric()
CHAFF = list_chaff(ROOT / "submissions" / "chaff")
BANK = load_questions(RUBRIC)
ANCHORS = {s.anchor for s in statements()}


def test_every_statement_has_a_criterion_and_every_criterion_a_chaff() -> None:
    assert problems(RUBRIC, CHAFF, bank=BANK) == []
    assert len(statements()) >= 30  # definitions, each deliverable's rules, the files the contract asks for


def test_docs_show_the_table_as_it_is() -> None:
    assert docs_table() == render(rows(RUBRIC, CHAFF, bank=BANK)), "run: python -m grader.kit.traceability --write"


def test_a_broken_chain_is_named(tmp_path: Path) -> None:
    task = tmp_path / "TASK.md"
    task.write_text((ROOT / "starter" / "TASK.md").read_text() + '\n- <a id="new-rule"></a>A rule nobody grades.\n')
    found = problems(RUBRIC, [c for c in CHAFF if c.name != "gateway-health-204"], task, BANK)
    assert any("new-rule: no criterion checks this statement" in p for p in found)
    assert any(
        "new-rule: 0 interview question(s) probe this statement; 2 at least (questions.yaml)" in p for p in found
    )
    assert "gateway.starts: no chaff loses this criterion (submissions/chaff/*/chaff.yaml targets)" in found


def test_every_fittable_constant_is_moved_by_an_unseen_draw_and_the_docs_show_them() -> None:
    from grader.kit.fittable import FIT_END, FIT_START, fittable, fittable_problems, render_fittable, unseen_draws

    constants = fittable()
    assert fittable_problems(constants, CHAFF, unseen_draws(), ANCHORS) == []
    assert docs_table(start=FIT_START, end=FIT_END) == render_fittable(constants), (
        "run: python -m grader.kit.traceability --write"
    )
    # the rules the fit-proof grading added each have their constant, a draw and a chaff fitted to it
    named = {c for f in constants for c in f.chaff}
    assert {
        "gateway-connect-fixed",
        "gateway-total-fixed",
        "gateway-probe-fixed",
        "gateway-prices-published",
        "gateway-sse-lf-only",
        "gateway-tokenizer-copy",
        "loadgen-timeout-fixed",
        "sizing-validates-published-only",
    } <= named


def test_a_constant_whose_draw_is_removed_fails_the_check(tmp_path: Path) -> None:
    """Take the connect timeout's draw out of the variants file: its constant then has nothing that moves it."""
    import yaml

    from grader.kit.fittable import fittable, fittable_problems, unseen_draws
    from grader.rubric.sizing_plan import HIDDEN_SETS
    from grader.rubric.variants import VARIANTS_FILE

    data = yaml.safe_load(VARIANTS_FILE.read_text())
    del data["gateway"]["config"]["local.timeouts.connect_s"]
    variants = tmp_path / "variants.yaml"
    variants.write_text(yaml.safe_dump(data))
    found = fittable_problems(fittable(), CHAFF, unseen_draws(variants, HIDDEN_SETS), ANCHORS)
    assert found == [
        "connect_s (1 s): draw 'gateway.config.local.timeouts.connect_s': the unseen material makes no such draw"
    ]
    without_reason = next(f for f in fittable() if f.constant.startswith("connect_s"))
    bare = type(without_reason)(without_reason.constant, without_reason.anchors, (), "", ())
    assert fittable_problems([bare], CHAFF, unseen_draws(), ANCHORS) == [
        "connect_s (1 s): no unseen draw moves it, and no reason says it cannot be fitted"
    ]


def test_a_drawn_constant_names_its_fitted_chaff_or_says_why_none() -> None:
    """A constant a draw moves is proved by a chaff fitted to it, or says why no solution fitted to its published
    value passes the published runs (they already move it); otherwise nothing shows the draw catches a fit."""
    from dataclasses import replace

    from grader.kit.fittable import fittable, fittable_problems, unseen_draws

    constants = fittable()
    fitted = next(f for f in constants if f.constant.startswith("connect_s"))
    reasoned = next(f for f in constants if f.constant.startswith("tokens per chunk"))
    assert fitted.chaff and reasoned.no_chaff and not reasoned.chaff
    assert fittable_problems([replace(reasoned, no_chaff="")], CHAFF, unseen_draws(), ANCHORS) == [
        "tokens per chunk (4) and the answer's length: no chaff is fitted to it, and no reason says why none is"
    ]
    assert fittable_problems([replace(fitted, chaff=())], CHAFF, unseen_draws(), ANCHORS) == [
        "connect_s (1 s): no chaff is fitted to it, and no reason says why none is"
    ]
    # a constant no draw moves needs no chaff: its published run already moves it
    cannot = next(f for f in constants if f.cannot_fit)
    assert not cannot.chaff and fittable_problems([cannot], CHAFF, unseen_draws(), ANCHORS) == []
