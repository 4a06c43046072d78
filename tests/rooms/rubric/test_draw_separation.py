"""Draw separation: every chaff fitted to a published constant fails its criterion on every seed, by more than the
borderline band, never by chance and never `inconclusive`.

A fitted chaff passes the published runs and loses only on the unseen draws (grader/kit/fittable.yaml names each
with the constant it hard-codes). Graded live it would take a full grade per seed; judged from the draws and the
criterion's own arithmetic it takes milliseconds: for 50 seeds, what the fitted value does on the drawn setting is
held to what the criterion allows, with room to spare. A fitted chaff listed there without its arithmetic here
fails the last test, so a new one cannot be left unproven.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml
from kit_paths import ROOT

from fake_server.server_draw import ServerDraw
from grader.criteria.verdict import toward_bound
from grader.rubric import Rubric, load_rubric
from grader.rubric.gateway_plan import GatewayPlan
from grader.rubric.variants import Variants, load_variants

RUBRIC = load_rubric()
VARIANTS = load_variants(RUBRIC)
SEEDS = range(50)
#: The default edition and three drawn ones (grader/rubric/editions.py).
EDITIONS = ("default", "spring-2027", "autumn-2027", "cohort-12")
#: Past the quiet borderline band's top: a verdict, not a rerun.
CLEAR = RUBRIC.judging.borderline[1]


def _case(plan: GatewayPlan, name: str) -> dict[str, Any]:
    return next(c for c in plan.cases if c.name == name).to_dict()


def _statuses(rubric: Rubric, scenario: str) -> set[int]:
    return {f["status"] for f in rubric.scenarios[scenario].server["faults"] if "status" in f}


def loadgen_error_statuses(r: Rubric, v: Variants, seed: int) -> list[str]:
    published = _statuses(r, "http-errors")
    drawn = {f["status"] for f in v.scenario(r.scenarios["http-errors"], 1, seed).server["faults"] if "status" in f}
    return [] if drawn - published else [f"every drawn status is one of the published {sorted(published)}"]


def loadgen_timeout(r: Rubric, v: Variants, seed: int) -> list[str]:
    published = r.scenarios["timeout"].loadgen["timeout_s"]
    drawn = v.scenario(r.scenarios["timeout"], 1, seed)
    timeout, (long, within) = drawn.loadgen["timeout_s"], [f["seconds"] for f in drawn.server["faults"]]
    out = []
    if within < published + 0.3:  # the fitted client abandons the in-time request at its published timeout
        out.append(f"the in-time stall {within} s is not clearly past the published timeout {published} s")
    if within > timeout - 0.3 or long < timeout + 0.5:
        out.append(f"stalls {within} / {long} s are not clearly within / past the drawn timeout {timeout} s")
    return out


def _gateway_statuses(case: str, published: set[int]) -> Callable[[Rubric, Variants, int], list[str]]:
    def check(r: Rubric, v: Variants, seed: int) -> list[str]:
        status = _case(v.gateway_plan(r.gateway, 1, seed), case)["local_faults"][0]["status"]
        return [f"{case}: status {status} is one a fitted gateway lists"] if status in published else []

    return check


def gateway_first_byte(r: Rubric, v: Variants, seed: int) -> list[str]:
    plan = v.gateway_plan(r.gateway, 1, seed)
    stall = _case(plan, "local-first-byte-in-time")["local_faults"][0]["seconds"]
    fitted = r.gateway.first_byte_s
    if stall < fitted + 0.1 or stall > plan.first_byte_s - 0.25:
        return [
            (
                f"the in-time first byte at {stall} s is not between the published {fitted} s and the drawn "
                f"{plan.first_byte_s} s with room"
            )
        ]
    return []


def gateway_connect(r: Rubric, v: Variants, seed: int) -> list[str]:
    plan = v.gateway_plan(r.gateway, 1, seed)
    allowed = plan.connect_s + r.criterion("gateway.fallback-timeout").tol("connect_margin_s")
    fitted = r.gateway.connect_s  # it asks the API only then
    return [] if fitted >= allowed + 0.3 else [f"a fitted {fitted} s connect is within {allowed:.3f} s + 0.3 s"]


def gateway_total(r: Rubric, v: Variants, seed: int) -> list[str]:
    plan = v.gateway_plan(r.gateway, 1, seed)
    allowed = plan.total_s + r.criterion("gateway.committed-stream").tol("total_margin_s")
    fitted = r.gateway.total_s  # its stream ends only then
    pause = _case(plan, "local-total-stall")["local_faults"][0]["seconds"]
    out = [] if fitted >= allowed + 0.2 else [f"a fitted total_s {fitted} s ends within {allowed:.3f} s + 0.2 s"]
    return out + ([] if pause >= fitted + 0.2 else [f"the pause {pause} s ends before the fitted {fitted} s"])


def gateway_probe(r: Rubric, v: Variants, seed: int) -> list[str]:
    """A probe at the published period, judged as the criterion judges a median gap on the drawn interval."""
    interval = v.gateway_plan(r.gateway, 1, seed).health_interval_s
    criterion = r.criterion("gateway.health-probe")
    band = criterion.tol("probe_low_ratio") * interval, criterion.tol("probe_high_ratio") * interval
    margin = toward_bound(r.gateway.health_interval_s, interval, *band)
    # far enough to stand even on a machine too busy to keep time (a median of many gaps is no noise)
    return (
        []
        if margin > max(CLEAR, criterion.tol("probe_clear_ratio"))
        else [
            (
                f"a probe every published {r.gateway.health_interval_s} s has "
                f"margin {margin:.2f} on a drawn {interval} s: not a clear fail"
            )
        ]
    )


def gateway_prices(r: Rubric, v: Variants, seed: int) -> list[str]:
    drawn = v.gateway_plan(r.gateway, 1, seed).config["api"]["prices"]
    published = r.gateway.config["api"]["prices"]
    return [
        f"{k}: drawn {drawn[k]} is within half again of the published {published[k]}"
        for k in drawn
        if max(drawn[k], published[k]) < 1.5 * min(drawn[k], published[k])
    ]


def gateway_framing(r: Rubric, v: Variants, seed: int) -> list[str]:
    servers = v.gateway_plan(r.gateway, 1, seed)
    return [
        f"{name}: LF endings, as published"
        for name, s in (("local", servers.local_server), ("api", servers.api_server))
        if s.get("sse_line_ending", "lf") == "lf"
    ]


def gateway_template(r: Rubric, v: Variants, seed: int) -> list[str]:
    prompt = v.gateway_plan(r.gateway, 1, seed).local_server.get("default_system_prompt")
    return [] if prompt else ["the local chat template adds nothing: a copied tokenizer counts right"]


def gateway_context(r: Rubric, v: Variants, seed: int) -> list[str]:
    drawn, published = v.gateway_plan(r.gateway, 1, seed).max_model_len, r.gateway.max_model_len
    return [] if abs(drawn - published) >= 8 else [f"max_model_len {drawn} is within 8 of the published {published}"]


def gateway_tokenize_status(r: Rubric, v: Variants, seed: int) -> list[str]:
    status = _case(v.gateway_plan(r.gateway, 1, seed), "tokenize-error")["local_faults"][0]["status"]
    published = _case(r.gateway, "tokenize-error")["local_faults"][0]["status"]
    return [f"the /tokenize error is the published {published}"] if status == published else []


def gateway_route_names(r: Rubric, v: Variants, seed: int) -> list[str]:
    """A gateway naming the published models and key: each server must serve another name and take another key, the
    servers as the grader starts them (their settings follow the drawn config)."""
    plan, published = v.gateway_plan(r.gateway, 1, seed), r.gateway
    out = [
        f"{route}: serves the published model {p.config[route]['model']}"
        for route, p in (("local", published), ("api", published))
        if plan.config[route]["model"] == published.config[route]["model"]
    ]
    out += [
        f"{route}'s server serves {server['served_model_name']}, not the config's {plan.config[route]['model']}"
        for route, server in (("local", plan.local_server), ("api", plan.api_server))
        if server["served_model_name"] != [plan.config[route]["model"]]
    ]
    if plan.api_server["api_key"] in (published.config["api"]["api_key"], None):
        out.append(f"the API takes the published key {published.config['api']['api_key']}")
    return out


def sizing_refusals(r: Rubric, v: Variants, seed: int) -> list[str]:
    unseen = r.sizing.with_hidden().refuse
    published = {(r.flag, repr(r.value)) for r in r.sizing.refuse}
    return [] if any((r.flag, repr(r.value)) not in published for r in unseen) else ["no unseen input to refuse"]


def percentile_tests_fitted(r: Rubric, v: Variants, seed: int) -> list[str]:
    """The chaff's one test, p25 of a shuffled 1..10 is 3, against each unseen method the seed draws: it must let
    one through (the suite then loses the criterion's unseen half)."""
    missed = []
    for name, source in v.percentile_methods_at(seed).items():
        scope: dict[str, Any] = {}
        exec(source, scope)  # noqa: S102 - the kit's own unseen material
        if scope["method"]([7, 2, 9, 4, 1, 10, 3, 6, 8, 5], 25) == 3:
            missed.append(name)
    return [] if missed else [f"the fitted test catches every drawn method: {sorted(v.percentile_methods_at(seed))}"]


def slot_test_fitted(r: Rubric, v: Variants, seed: int) -> list[str]:
    """The chaff's slot test asks for 2 slots at 100 tokens/s, sends 8 requests of 32 tokens at once and asserts a p90
    TTFT over 0.8 s (three answers of 0.32 s wait in the queue). Against the server the seed draws, the p90 waits
    (waves - 1) answers of the drawn rate; with 50 ms allowed for prefill and a busy machine it must stay under 0.8 s
    (the test then fails against the drawn server, and the suite loses the criterion's unseen half)."""
    draw_seed = v.server_draw_at(seed)
    if draw_seed is None:
        return ["the grade runs no drawn server"]
    draw = ServerDraw.from_seed(draw_seed)
    slots, rate = 2 * draw.slots, 100.0 * draw.token_rate
    p90 = (math.ceil(8 / slots) - 1) * 32 / rate
    return [] if p90 + 0.05 < 0.8 else [f"{draw.describe()}: the p90 waits {p90:.2f} s, over the fitted 0.8 s"]


#: Each fitted chaff (grader/kit/fittable.yaml), and the arithmetic that shows its constant fails on a draw.
FITTED: dict[str, Callable[[Rubric, Variants, int], list[str]]] = {
    "loadgen-error-statuses-listed": loadgen_error_statuses,
    "loadgen-timeout-fixed": loadgen_timeout,
    "gateway-fallback-on-listed-5xx": lambda r, v, s: (
        _gateway_statuses("local-500", {500, 502, 503})(r, v, s) + _gateway_statuses("rl-500", {500, 502, 503})(r, v, s)
    ),
    "gateway-no-fallback-on-listed-4xx": _gateway_statuses("local-400", {400, 404, 429}),
    "gateway-first-byte-fixed": gateway_first_byte,
    "gateway-connect-fixed": gateway_connect,
    "gateway-total-fixed": gateway_total,
    "gateway-probe-fixed": gateway_probe,
    "gateway-prices-published": gateway_prices,
    "gateway-sse-lf-only": gateway_framing,
    "gateway-tokenizer-copy": gateway_template,
    "gateway-context-fixed": gateway_context,
    "gateway-tokenize-error-500-only": gateway_tokenize_status,
    "gateway-route-names-published": gateway_route_names,
    "sizing-validates-published-only": sizing_refusals,
    "percentile-tests-fitted": percentile_tests_fitted,
    "slot-test-fitted": slot_test_fitted,
}


@pytest.mark.parametrize("edition", EDITIONS)
@pytest.mark.parametrize("chaff", sorted(FITTED))
def test_each_fitted_chaff_fails_its_criterion_on_every_seed(chaff: str, edition: str) -> None:
    """In every edition too: the variants are drawn around the edition's published numbers, and a chaff fitted to
    them fails as one fitted to the default's does."""
    assert VARIANTS is not None
    rubric = RUBRIC.for_edition(edition)
    failures = {seed: why for seed in SEEDS if (why := FITTED[chaff](rubric, VARIANTS, seed))}
    assert not failures, (
        f"{chaff} could pass on {len(failures)} of {len(SEEDS)} seeds of edition {edition}: "
        f"{dict(list(failures.items())[:3])}"
    )


def test_every_fitted_chaff_has_its_arithmetic_here() -> None:
    listed = {
        c
        for entry in yaml.safe_load((ROOT / "grader/kit/fittable.yaml").read_text())["constants"]
        for c in entry.get("chaff") or ()
    }
    assert listed == set(FITTED), f"fitted chaff without arithmetic: {sorted(listed - set(FITTED))}"


def test_the_arithmetic_catches_a_draw_too_close_to_the_published_value(tmp_path: Path) -> None:
    """The checks can fail: the draws of the earlier variants file (a probe interval from 0.5 s, a price from 1 to
    9 dollars, a context from 200 to 320 tokens) let fitted constants through on some seeds."""
    data = yaml.safe_load((ROOT / "grader/unseen/variants.yaml").read_text())
    data["gateway"]["config"]["local.health_interval_s"] = [0.3, 0.5]
    data["gateway"]["config"]["api.prices.input_per_million_usd"] = [1.0, 9.0]
    data["gateway"]["servers"]["local.max_model_len"] = [200, 320]
    path = tmp_path / "variants.yaml"
    path.write_text(yaml.safe_dump(data))
    close = load_variants(RUBRIC, path)
    assert close is not None
    for chaff in ("gateway-probe-fixed", "gateway-prices-published", "gateway-context-fixed"):
        assert any(FITTED[chaff](RUBRIC, close, seed) for seed in SEEDS), chaff
