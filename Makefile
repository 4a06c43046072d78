# Each target creates .venv and installs the kit into it if that has not been done yet.
PY ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: demo demo-server test check selftest bench schemas clean soak hostile-full

# Debian packages, installed when missing and this is root: bubblewrap for the grader's sandbox (else it
# runs UNSANDBOXED, and says so), chromium for the report.html screenshot test (else it is skipped).
$(STAMP): pyproject.toml
	missing="$$(command -v bwrap >/dev/null || echo bubblewrap) $$(command -v chromium >/dev/null || echo chromium)"; \
	[ -z "$$(echo $$missing)" ] || [ "$$(id -u)" != 0 ] || ! command -v apt-get >/dev/null || \
		{ apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $$missing; }
	test -x $(BIN)/python || $(PY) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[test,dev]'
	touch $(STAMP)

# The main job: grade the bundled reference submission; prints the score table and the report's path.
demo: $(STAMP)
	$(BIN)/grader grade submissions/reference --out grade-report --jobs 2

# Start the fake vLLM server, stream through it, and show its ledger and metrics.
demo-server: $(STAMP)
	$(BIN)/python -m fake_server.demo

selftest: $(STAMP)
	$(BIN)/grader selftest

test: $(STAMP)
	$(BIN)/python -m pytest -q --durations=25

# The quality gate, run by CI before the tests: fake_server/ is linted, formatted and type-checked
# strictly; the grader and the stub client are type-checked.
check: $(STAMP)
	$(BIN)/python -m ruff check fake_server
	$(BIN)/python -m ruff format --check fake_server
	$(BIN)/python -m mypy --strict fake_server
	$(BIN)/python -m mypy grader starter/api_client.py

bench: $(STAMP)
	$(BIN)/python -m bench.fidelity
	$(BIN)/python -m bench.loadgen_ttft
	$(BIN)/python -m bench.grade_time

# Ten minutes of mixed traffic, faults and reconfiguration against one fake server: memory and
# descriptors flat, no leak, a complete ledger (bench/results/soak.json; CI runs 20 s of it).
soak: $(STAMP)
	$(BIN)/python -m bench.soak --minutes 10

# The long hostile runs CI leaves out: the busy loop and the sleeper as the load generator (90 s
# each), every criterion graded five times for determinism, then the whole selftest on a loaded
# machine with each timing margin (bench/results/loaded.json).
hostile-full: $(STAMP)
	HOSTILE_FULL=1 $(BIN)/python -m pytest -q tests/hostile tests/test_determinism.py
	$(BIN)/python -m bench.loaded

schemas: $(STAMP)
	$(BIN)/python -m grader.kit.schemas_build

clean:
	rm -rf $(VENV) .pytest_cache grade-report
