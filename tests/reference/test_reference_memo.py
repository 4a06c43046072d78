"""The reference memo: honest by the contract's rules, and every figure it quotes is what the sizing script prints.

The memo states its own sizing command; the test runs that command (and its stated variants) from
submissions/reference/ exactly as written, so the memo and the script cannot drift apart unnoticed.
The honesty rules themselves (grader/criteria/memo_rules.py) are tested here on small front matters that
break one rule each.
"""

from __future__ import annotations

import json
import re
import shlex
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml
from jsonschema import Draft202012Validator
from kit_paths import ROOT

from grader.criteria.memo_rules import check_figures, check_memo, errors, split_front_matter

REFERENCE = ROOT / "submissions" / "reference"
MEMO = REFERENCE / "memo" / "MEMO.md"
TEXT = MEMO.read_text(encoding="utf-8")
FRONT, BODY, _ = split_front_matter(TEXT)
FIGURES = {f["name"]: f for f in FRONT["figures"]}


# --- the reference memo ----------------------------------------------------------------------------


def test_reference_memo_breaks_no_rule_and_needs_no_advice() -> None:
    assert check_memo(TEXT) == []


def test_front_matter_follows_the_contract_schema() -> None:
    schema = json.loads((ROOT / "schemas" / "contract" / "memo-front-matter.schema.json").read_text())
    assert [e.message for e in Draft202012Validator(schema).iter_errors(FRONT)] == []


def test_memo_is_one_page() -> None:
    assert len(BODY.split()) <= 800 and len(BODY.strip().splitlines()) <= 70


def test_every_throughput_says_where_it_came_from_and_only_a_measured_requests_speed_is_per_user() -> None:
    speeds = [f for f in FRONT["figures"] if "/s" in f["unit"]]
    assert speeds and all(f["scope"] in ("aggregate", "per_user") for f in speeds)
    per_user = [f for f in speeds if f["scope"] == "per_user"]
    assert [f["derived_from"] for f in per_user] == ["loadgen:summary.tps.p50"]  # one request's speed, measured
    assert FIGURES["replica_throughput"]["provenance"] == "invented sample"
    assert {f["provenance"] for f in FRONT["figures"]} >= {"invented sample", "assumption", "measured on fake server"}


def test_sizing_is_called_a_placeholder_until_measured_on_the_target_gpu() -> None:
    first_paragraph = BODY.strip().split("\n\n")[1]
    assert "placeholder" in first_paragraph.lower()
    assert "target GPU" in BODY


def stated_commands() -> dict[str, list[str]]:
    """The memo's sizing command and its variants ("same inputs with `--flag value`"), as argv."""
    [block] = re.findall(r"```sh\n(python sizing/sizing\.py.*?)```", BODY, re.DOTALL)
    base = shlex.split(block.replace("\\\n", " "))
    commands = {"main": base}
    for name, flag, value in re.findall(r"variant `(\w+)`: same inputs with `(--[\w-]+) ([^`]+)`", BODY):
        assert flag in base, f"variant {name} changes {flag}, which the command does not set"
        variant = list(base)
        variant[variant.index(flag) + 1] = value
        commands[name] = variant
    return commands


@pytest.fixture(scope="module")
def outputs() -> dict[str, dict[str, Any]]:
    results = {}
    for name, argv in stated_commands().items():
        assert argv[:2] == ["python", "sizing/sizing.py"]
        done = subprocess.run(
            [sys.executable, *argv[1:]], cwd=REFERENCE, capture_output=True, text=True, timeout=60, check=False
        )
        assert done.returncode == 0, done.stderr
        results[name] = json.loads(done.stdout)
    assert set(results) == {"main", "one_stream", "bf16"}
    return results


def _row(rows: list[dict[str, Any]], **match: float) -> float:
    [row] = [r for r in rows if all(r[k] == v for k, v in match.items())]
    return float(row["usd"])


Output = dict[str, dict[str, Any]]
# Where each front-matter figure comes from in the script's output (or its inputs).
FROM_SCRIPT: dict[str, Callable[[Output], float]] = {
    "replica_throughput": lambda o: o["main"]["inputs"]["throughput"],
    "one_stream_throughput": lambda o: o["one_stream"]["inputs"]["throughput"],
    "gpu_hour_price_low": lambda o: o["main"]["inputs"]["gpu_hour_usd"][0],
    "gpu_hour_price_high": lambda o: o["main"]["inputs"]["gpu_hour_usd"][1],
    "utilisation_busy": lambda o: o["main"]["inputs"]["utilisation"][0],
    "utilisation_quarter": lambda o: o["main"]["inputs"]["utilisation"][1],
    "chats_per_day": lambda o: o["main"]["inputs"]["chats_per_day"],
    "peak_output_tokens_per_s": lambda o: o["main"]["peak_output_tokens_per_s"],
    "replicas_for_load": lambda o: o["main"]["replicas_for_load"],
    "replicas": lambda o: o["main"]["replicas"],
    "cost_per_million_low_busy": lambda o: _row(
        o["main"]["cost_per_million_output_tokens"], gpu_hour_usd=2.99, utilisation=1.0
    ),
    "cost_per_million_low_quarter": lambda o: _row(
        o["main"]["cost_per_million_output_tokens"], gpu_hour_usd=2.99, utilisation=0.25
    ),
    "cost_per_million_high_busy": lambda o: _row(
        o["main"]["cost_per_million_output_tokens"], gpu_hour_usd=6.88, utilisation=1.0
    ),
    "cost_per_million_high_quarter": lambda o: _row(
        o["main"]["cost_per_million_output_tokens"], gpu_hour_usd=6.88, utilisation=0.25
    ),
    "cost_per_million_one_stream_low": lambda o: _row(
        o["one_stream"]["cost_per_million_output_tokens"], gpu_hour_usd=2.99, utilisation=1.0
    ),
    "monthly_one_replica_low": lambda o: _row(o["main"]["monthly_cost"], gpu_hour_usd=2.99, replicas=1),
    "monthly_one_replica_high": lambda o: _row(o["main"]["monthly_cost"], gpu_hour_usd=6.88, replicas=1),
    "monthly_two_replicas_low": lambda o: _row(o["main"]["monthly_cost"], gpu_hour_usd=2.99, replicas=2),
    "monthly_two_replicas_high": lambda o: _row(o["main"]["monthly_cost"], gpu_hour_usd=6.88, replicas=2),
    "cost_per_chat_low": lambda o: _row(o["main"]["cost_per_chat_usd"], gpu_hour_usd=2.99),
    "cost_per_chat_high": lambda o: _row(o["main"]["cost_per_chat_usd"], gpu_hour_usd=6.88),
    "output_tokens_per_chat": lambda o: (
        o["main"]["inputs"]["turns_per_chat"] * o["main"]["inputs"]["output_tokens_per_turn"]
    ),
    # Per chat over the chat's output tokens: the cost per million this load really pays.
    "workload_cost_per_million_low": lambda o: (
        _row(o["main"]["cost_per_chat_usd"], gpu_hour_usd=2.99)
        / (o["main"]["inputs"]["turns_per_chat"] * o["main"]["inputs"]["output_tokens_per_turn"])
        * 1e6
    ),
    "api_cost_per_chat": lambda o: o["main"]["api"]["cost_per_chat_usd"],
    "api_cost_per_million_with_input": lambda o: o["main"]["api"]["usd_per_million_output_tokens_with_input"],
    "api_monthly": lambda o: o["main"]["api"]["monthly_usd"],
    # Chats a day at which two replicas' month equals the API's: monthly / 30 days / API per chat.
    "break_even_chats_per_day": lambda o: (
        _row(o["main"]["monthly_cost"], gpu_hour_usd=2.99, replicas=2) / 30 / o["main"]["api"]["cost_per_chat_usd"]
    ),
    "kv_cache_tokens_fp8": lambda o: o["main"]["kv_cache"]["tokens"],
    "sequences_at_8k_fp8": lambda o: o["main"]["kv_cache"]["sequences_at_context"],
    "kv_cache_tokens_bf16": lambda o: o["bf16"]["kv_cache"]["tokens"],
    "sequences_at_8k_bf16": lambda o: o["bf16"]["kv_cache"]["sequences_at_context"],
    "batch_minutes": lambda o: o["main"]["batch_hours"] * 60,
}
#: Figures that are not sizing arithmetic, and why: the memo's own measurements, a recorded `make demo` run on the
#: fake server, each cited from the results file it names.
NOT_FROM_SCRIPT = {
    name: "a recorded `make demo` run on the fake server"
    for name in (
        "ttft_p50_fake_server",
        "ttft_p90_fake_server",
        "ttft_max_fake_server",
        "tps_p50_fake_server",
        "throughput_fake_server",
    )
}


def test_every_figure_is_accounted_for() -> None:
    assert set(FIGURES) == set(FROM_SCRIPT) | set(NOT_FROM_SCRIPT)


@pytest.mark.parametrize("name", sorted(NOT_FROM_SCRIPT))
def test_a_measured_figure_is_its_results_file_rounded_and_labelled_as_the_fake_servers(name: str) -> None:
    results = json.loads((REFERENCE / FRONT["loadgen_results"]).read_text())
    figure = FIGURES[name]
    value: Any = results
    for part in figure["derived_from"].removeprefix("loadgen:").split("."):
        value = value[part]
    decimals = len(repr(float(figure["value"])).split(".")[1])
    assert round(value, decimals) == figure["value"], (name, value)
    assert figure["provenance"] == "measured on fake server" and figure["status"] == "measured"
    if "percentile" in figure:
        assert figure["sample_size"] == results["summary"]["ttft_s"]["n"] == results["summary"]["tps"]["n"]


@pytest.mark.parametrize("name", sorted(FROM_SCRIPT))
def test_memo_figure_is_what_the_stated_command_prints(name: str, outputs: Output) -> None:
    stated, computed = FIGURES[name]["value"], FROM_SCRIPT[name](outputs)
    # A figure is quoted rounded, to the decimals of its value as YAML reads it (1.40 reads as 1.4).
    decimals = len(repr(float(stated)).split(".")[1].rstrip("0")) if not float(stated).is_integer() else 0
    assert abs(stated - computed) <= 0.5 * 10**-decimals + 1e-9, f"{name}: memo {stated}, script {computed}"


def test_the_cost_table_is_the_script_output(outputs: Output) -> None:
    rows = re.findall(r"^\| \$(\d+\.\d\d) \| \$(\d+\.\d\d) \| \$(\d+\.\d\d) \|$", BODY, re.MULTILINE)
    assert len(rows) == 2
    per_million = outputs["main"]["cost_per_million_output_tokens"]
    for price, busy, quarter in rows:
        assert round(_row(per_million, gpu_hour_usd=float(price), utilisation=1.0), 2) == float(busy)
        assert round(_row(per_million, gpu_hour_usd=float(price), utilisation=0.25), 2) == float(quarter)


def test_memo_states_the_inputs_the_manifests_deploy(outputs: Output) -> None:
    docs = list(yaml.safe_load_all((REFERENCE / "manifests" / "rendered" / "vllm.yaml").read_text()))
    args = next(d for d in docs if d["kind"] == "Deployment")["spec"]["template"]["spec"]["containers"][0]["args"]
    inputs = outputs["main"]["inputs"]
    assert int(args[args.index("--max-model-len") + 1]) == inputs["context_tokens"]
    assert float(args[args.index("--gpu-memory-utilization") + 1]) == inputs["gpu_memory_utilization"]
    max_num_seqs = int(args[args.index("--max-num-seqs") + 1])
    assert max_num_seqs <= outputs["main"]["kv_cache"]["sequences_at_context"]
    scaled = next(d for d in docs if d["kind"] == "ScaledObject")
    assert scaled["spec"]["minReplicaCount"] == outputs["main"]["replicas"]


# --- the honesty rules on front matters that break one each ----------------------------------------


def fig(**fields: Any) -> dict[str, Any]:
    base = {
        "name": "replica_throughput",
        "value": 595,
        "unit": "output tokens/s",
        "provenance": "invented sample",
        "scope": "aggregate",
    }
    return {**base, **fields}


def rules(*figures: dict[str, Any], body: str = "a placeholder") -> set[str]:
    return {f.rule for f in errors(check_figures({"contract": 1, "figures": list(figures)}, body))}


def test_a_plain_labelled_throughput_passes() -> None:
    assert rules(fig()) == set()


def test_a_percentile_needs_its_sample_size() -> None:
    assert rules(fig(), fig(name="ttft_p90", value=0.2, unit="s", scope="n/a", provenance="laptop", percentile=90)) == {
        "percentile-sample-size"
    }


@pytest.mark.parametrize(
    ("n", "name", "broken"),
    [(10, "ttft_p99", True), (99, "ttft_p99", True), (10, "ttft_p99_max", False), (100, "ttft_p99", False)],
)
def test_a_p99_from_fewer_than_100_requests_must_be_called_the_maximum(n: int, name: str, broken: bool) -> None:
    p99 = fig(
        name=name, value=0.3, unit="s", scope="n/a", provenance="measured on fake server", percentile=99, sample_size=n
    )
    assert rules(fig(), p99) == ({"p99-is-max"} if broken else set())


def test_a_speed_needs_a_scope() -> None:
    assert rules(fig(scope="n/a")) == {"speed-scope"}
    assert rules({k: v for k, v in fig().items() if k != "scope"}) == {"speed-scope"}


def test_aggregate_throughput_is_not_one_users_speed() -> None:
    # the scope field says what a figure is, not a word of its name or unit
    worded = fig(
        name="per_user_throughput",
        unit="output tokens/s per user (throughput)",
        scope="per_user",
        provenance="invented sample",
    )
    assert rules(worded) == set()
    # the aggregate restated per user: derived from it, with its value (a coincidence of values alone is not)
    restated = fig(name="user_speed", scope="per_user", provenance="invented sample", derived_from=fig()["name"])
    assert rules(fig(), restated) == {"per-user-not-aggregate"}
    same_number = fig(name="user_speed", scope="per_user", provenance="invented sample")
    assert rules(fig(), same_number) == set()
    measured = fig(
        name="request_tps_p50",
        value=38.5,
        scope="per_user",
        provenance="measured on fake server",
        percentile=50,
        sample_size=200,
    )
    assert rules(fig(), measured) == set()


#: The sizing's inputs a memo states: the replica's aggregate throughput, and the streams that share it.
SIZED = {"throughput": 595, "concurrency": 16}


def sized_rules(*figures: dict[str, Any], inputs: dict[str, Any] = SIZED, body: str = "a placeholder") -> set[str]:
    front = {"contract": 1, "figures": list(figures), "sizing_inputs": inputs}
    return {f.rule for f in errors(check_figures(front, body))}


def user_speed(value: float, **fields: Any) -> dict[str, Any]:
    return fig(name="user_speed", value=value, scope="per_user", **fields)


@pytest.mark.parametrize(
    "derived_from",
    [
        None,
        "replica_throughput",
        "sizing:per_stream_output_tokens_per_s",
        "loadgen:summary.tps.p50",
        ["chats_per_day", "sizing:replicas"],
    ],
)
def test_the_throughput_streams_share_is_no_users_speed_whatever_it_cites(derived_from: Any) -> None:
    cites = {"derived_from": derived_from} if derived_from else {}
    restated = user_speed(SIZED["throughput"], **cites)
    assert sized_rules(fig(), restated) == {"per-user-not-aggregate"}
    assert sized_rules(restated) == {"per-user-not-aggregate"}  # the input says it, with no aggregate figure beside


def test_a_users_share_of_the_throughput_is_a_users_speed() -> None:
    share = round(SIZED["throughput"] / SIZED["concurrency"], 2)
    assert sized_rules(fig(), user_speed(share, derived_from="sizing:per_stream_output_tokens_per_s")) == set()


def test_at_one_stream_the_aggregate_is_that_users_speed_even_restated() -> None:
    alone = {**SIZED, "concurrency": 1}
    restated = user_speed(alone["throughput"], derived_from="replica_throughput")
    assert sized_rules(fig(), restated, inputs=alone) == set()
    assert sized_rules(fig(), restated) == {"per-user-not-aggregate"}  # the same figures, with 16 streams sharing it


def test_words_in_a_unit_never_decide_whose_speed_a_figure_is() -> None:
    share = SIZED["throughput"] / SIZED["concurrency"]
    said_aggregate = user_speed(round(share, 2), unit="output tokens/s (aggregate throughput share)")
    assert sized_rules(fig(), said_aggregate) == set()
    said_per_user = user_speed(SIZED["throughput"], unit="output tokens/s per user")
    assert sized_rules(fig(), said_per_user) == {"per-user-not-aggregate"}
    aggregate_said_per_user = fig(unit="output tokens/s per user")  # its scope says aggregate: it is one
    assert sized_rules(aggregate_said_per_user) == set()


def test_production_is_not_sized_on_a_laptop_or_the_fake_server() -> None:
    assert rules(fig(provenance="laptop")) == {"production-provenance"}
    local_only = fig(name="loadgen_throughput", provenance="measured on fake server")
    assert rules(local_only) == {"production-provenance"}
    assert rules(local_only, fig(name="replica_throughput", provenance="target GPU")) == set()


def test_a_sizing_not_measured_on_the_target_gpu_is_advised_to_say_placeholder() -> None:
    findings = check_figures({"contract": 1, "figures": [fig()]}, "Two replicas suffice.")
    assert [(f.rule, f.severity) for f in findings] == [("placeholder-stated", "advice")]
    assert check_figures({"contract": 1, "figures": [fig(provenance="target GPU")]}, "Two replicas.") == []


@pytest.mark.parametrize(
    ("bad", "rule"),
    [
        ({"provenance": "a blog"}, "figure-fields"),
        ({"value": "595"}, "figure-fields"),
        ({"name": "Replica Throughput"}, "figure-fields"),
        ({"unit": ""}, "figure-fields"),
        ({"scope": "user"}, "figure-fields"),
        ({"percentile": 150, "sample_size": 10}, "figure-fields"),
        ({"percentile": 50, "sample_size": 0}, "figure-fields"),
        ({"max)": None}, "figure-fields"),
    ],
)
def test_malformed_figures_are_named(bad: dict[str, Any], rule: str) -> None:
    assert rule in rules(fig(**bad))


@pytest.mark.parametrize(
    ("text", "why"),
    [
        ("# Memo\nno front matter", "line 1: the memo must start with YAML front matter"),
        ("---\nfigures: [\n---\n", "not valid YAML"),
        ("  ---\nfigures: []\n---\n", "line 1: the front matter's `---` must start the line"),
        ("\ufeff---\n---\n", "the front matter is empty"),
        ("---\n- a list\n---\n", "mapping"),
        ("---\ncontract: 5\nfigures: []\n---\n", "contract must be 1, 2, 3 or 4"),
    ],
)
def test_a_missing_or_broken_front_matter_is_one_finding(text: str, why: str) -> None:
    findings = check_memo(text)
    assert findings and findings[0].rule == "front-matter" and why in findings[0].message


def test_an_unquoted_comma_in_a_flow_mapping_is_caught() -> None:
    text = (
        "---\ncontract: 1\nfigures:\n  - {name: ttft_p99, value: 0.3, unit: s (TTFT, max), "
        "provenance: laptop, scope: n/a, percentile: 99, sample_size: 6}\n---\n"
    )
    # YAML reads the unit as "s (TTFT" and a key "max)": the label "max" is lost, so the p99 rule fires too.
    assert {f.rule for f in errors(check_memo(text))} == {"figure-fields", "p99-is-max"}


def test_the_contracts_example_front_matter_passes() -> None:
    example = ROOT / "schemas" / "contract" / "examples" / "memo-front-matter.yaml"
    front = yaml.safe_load(example.read_text())
    assert errors(check_figures(front)) == []


def test_one_streams_speed_is_no_aggregate_sold_per_user_but_a_restated_one_is() -> None:
    """At one stream a user's speed is the aggregate's: equal values alone are not the fault; an
    aggregate figure restated as a per-user one (derived from it, same value) is."""
    line = "{name: one_stream_throughput, value: 42, unit: output tokens/s, provenance: invented sample, scope: aggregate, status: placeholder}"
    per_user = (
        "\n  - {name: one_user_speed, value: 42, unit: output tokens/s, provenance: invented sample, "
        "scope: per_user, status: placeholder"
    )
    equal = TEXT.replace(line, line + per_user + "}")
    assert "per-user-not-aggregate" not in {f.rule for f in errors(check_memo(equal))}
    restated = TEXT.replace(line, line + per_user + ", derived_from: one_stream_throughput}")
    assert "per-user-not-aggregate" in {f.rule for f in errors(check_memo(restated))}


def test_the_loads_peak_demand_is_no_capacity_that_vouches_for_a_laptop_throughput() -> None:
    """A replica's throughput measured on a laptop is caught even beside an `assumption` figure that is the
    load's peak demand, derived from the sizing command (a result, not a capacity)."""
    laptop = TEXT.replace(
        "{name: replica_throughput, value: 595, unit: output tokens/s, provenance: invented sample, scope: aggregate, status: placeholder}",
        "{name: measured_tokens_per_s, value: 595, unit: output tokens/s, provenance: laptop, scope: aggregate, status: measured}",
    )
    laptop = laptop.replace(
        "{name: one_stream_throughput, value: 42, unit: output tokens/s, provenance: invented sample, scope: aggregate, status: placeholder}",
        "{name: one_stream_throughput, value: 42, unit: output tokens/s, provenance: laptop, scope: aggregate, status: measured}",
    )
    findings = {f.rule for f in errors(check_memo(laptop))}
    assert "production-provenance" in findings


def test_a_figure_not_measured_yet_may_leave_out_its_value() -> None:
    front: dict[str, Any] = {
        "contract": 1,
        "figures": [{"name": "ttft_on_h100", "unit": "s", "provenance": "target GPU", "status": "not measured"}],
    }
    assert errors(check_figures(front)) == []
    front["figures"][0]["status"] = "placeholder"
    assert any("value must be a finite number" in f.message for f in errors(check_figures(front)))


def test_grader_memo_names_and_quotes_the_line_it_faults(tmp_path: Path) -> None:
    """A finding on a figure points at the memo's line (`MEMO.md:N:`) and quotes it, as the grade's report does."""
    figure = "{name: one_stream_throughput, value: 42, unit: output tokens/s, provenance: invented sample, scope: aggregate, status: placeholder}"
    assert figure in TEXT
    memo = tmp_path / "MEMO.md"
    memo.write_text(TEXT.replace(figure, figure.replace("scope: aggregate", "scope: n/a")), encoding="utf-8")
    line = next(
        i for i, text in enumerate(memo.read_text().splitlines(), start=1) if "one_stream_throughput, value" in text
    )
    done = subprocess.run(
        [sys.executable, "-m", "grader.cli", "memo", str(memo)], capture_output=True, text=True, timeout=60, check=False
    )
    assert done.returncode == 1, done.stderr
    assert f"{memo}:{line}: ERROR  speed-scope [one_stream_throughput]" in done.stdout
    assert f"    > - {figure.replace('scope: aggregate', 'scope: n/a')}" in done.stdout


def test_the_throughput_the_sizing_ran_with_may_be_quoted_as_the_input_it_is() -> None:
    """The brief: a speed the text quotes is a figure of the front matter or an input of `sizing_inputs`."""
    inputs = {"throughput": 595, "concurrency": 16}
    front = {
        "contract": 1,
        "figures": [fig(name="one_stream_throughput", value=42, status="placeholder")],
        "sizing_inputs": inputs,
    }
    body = f"A placeholder: the sizing ran at {inputs['throughput']} tokens/s over {inputs['concurrency']} streams."
    assert errors(check_figures(front, body)) == []
    misquoted = body.replace(f"{inputs['throughput']} tokens/s", f"{inputs['throughput'] + 100} tokens/s")
    assert {f.rule for f in errors(check_figures(front, misquoted))} == {"text-matches-front-matter"}
