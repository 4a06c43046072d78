# Each target creates .venv and installs the kit into it if that has not been done yet.
PY ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: demo demo-server test test-fast fixtures check selftest bench schemas clean soak hostile-full debs-demo debs-test

# Debian packages, installed when missing and this is root (`command:package` pairs): the demo needs
# bubblewrap for the grader's sandbox (else it runs UNSANDBOXED, and says so); the tests also want
# chromium for the report.html screenshot test (else it is skipped).
DEBS_DEMO := bwrap:bubblewrap
DEBS_TEST := $(DEBS_DEMO) chromium:chromium
apt_install = missing=""; for pair in $(1); do command -v "$${pair%%:*}" >/dev/null || missing="$$missing $${pair\#\#*:}"; done; \
	[ -z "$$missing" ] || [ "$$(id -u)" != 0 ] || ! command -v apt-get >/dev/null || \
		{ apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $$missing; }

debs-demo:
	@$(call apt_install,$(DEBS_DEMO))

debs-test:
	@$(call apt_install,$(DEBS_TEST))

$(STAMP): pyproject.toml
	test -x $(BIN)/python || $(PY) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[test,dev,round]'
	touch $(STAMP)

# The main job: grade the bundled reference submission; prints the score table and the report's path.
demo: $(STAMP) debs-demo
	$(BIN)/grader grade submissions/reference --out grade-report --sandboxes 2

# Start the fake vLLM server, stream through it, and show its ledger and metrics.
demo-server: $(STAMP)
	$(BIN)/python -m fake_server.demo

selftest: $(STAMP)
	$(BIN)/grader selftest

# Every test, the slow ones included (real grades, the selftest, sandboxes, soak, the bundle), a test
# file to each worker at a time, longest first (tests/conftest.py), on four workers: about 9 minutes
# on two cores. The selftest is three of those files, two grades at once each; a grade mostly waits
# on token clocks, so four workers keep both cores busy. WORKERS=1 for one.
WORKERS ?= 4
XDIST = --dist loadfile --no-loadscope-reorder
test: $(STAMP) debs-test
	$(BIN)/python -m pytest -q -n $(WORKERS) $(XDIST) --durations=25

# The inner loop: every test but the slow ones, every criterion judged from recorded runs
# (tests/fixtures/runs), on three workers (about 90 s on two cores).
FAST_WORKERS ?= 3
test-fast: $(STAMP)
	$(BIN)/python -m pytest -q -n $(FAST_WORKERS) $(XDIST) -m "not slow" --durations=10

# Record the reference's and every chaff's runs for the fast tests (after a change to a submission,
# a scenario, the gateway plan or how runs are made; the fast tests say when a record is stale).
fixtures: $(STAMP) debs-demo
	$(BIN)/python tests/recorded.py

# The quality gate, run by CI before the tests: fake_server/ and grader/ are linted, formatted and
# type-checked strictly; the stub client is type-checked.
check: $(STAMP)
	$(BIN)/python -m ruff check fake_server grader
	$(BIN)/python -m ruff format --check fake_server grader
	$(BIN)/python -m mypy --strict fake_server grader
	$(BIN)/python -m mypy starter/api_client.py

bench: $(STAMP)
	$(BIN)/python -m bench.fidelity
	$(BIN)/python -m bench.loadgen_ttft
	$(BIN)/python -m bench.grade_time

# Ten minutes of mixed traffic, faults and reconfiguration against one fake server: memory and
# descriptors flat, no leak, a complete ledger (bench/results/soak.json; CI runs 20 s of it).
soak: $(STAMP)
	$(BIN)/python -m bench.soak --minutes 10

# The long hostile runs CI leaves out: the busy loop and the sleeper as the load generator (90 s
# each), every hostile program in every row of the sandbox's matrix (cgroup v1 and v2, read-only
# cgroups, user namespaces; grader/sandbox/README.md) and the Job's capabilities one by one, every
# criterion graded five times for determinism, then the whole selftest on a loaded machine with
# each timing margin (bench/results/loaded.json).
hostile-full: $(STAMP)
	HOSTILE_FULL=1 $(BIN)/python -m pytest -q tests/hostile tests/test_determinism.py tests/test_independent_submission.py
	$(BIN)/python -m bench.loaded

schemas: $(STAMP)
	$(BIN)/python -m grader.kit.schemas_build

clean:
	rm -rf $(VENV) .pytest_cache grade-report
