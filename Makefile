# Each target creates .venv and installs the kit into it if that has not been done yet.
PY ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: demo demo-server test test-full test-fast durations fixtures check selftest bench schemas clean soak hostile-full debs-demo debs-test \
	image wheels test-image

# Debian packages, installed when missing and this is root (`command:package` pairs): the demo needs
# bubblewrap for the grader's sandbox (else it runs UNSANDBOXED, and says so); the tests also want
# chromium for the report.html screenshot test and chromium-driver for `grader review`'s browser tests
# (else they are skipped).
DEBS_DEMO := bwrap:bubblewrap
DEBS_TEST := $(DEBS_DEMO) chromium:chromium chromedriver:chromium-driver
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

# What CI runs: every test, the slow ones included (real grades, the selftest, sandboxes, soak), with a
# sample of the longest end-to-end tests' parameters and one turn of the heaviest files (the bundle,
# grade-many, the browser's review, ...), drawn by SUITE_SEED and named at the end (tests/sampling.py);
# a test file to each worker at a time, longest first (tests/conftest.py), on four workers. The suite is
# CPU-bound on two cores (98% busy); the README has its measured time. WORKERS=1 for one.
WORKERS ?= 4
XDIST = --dist loadfile --no-loadscope-reorder
# Bytecode is written even where PYTHONDONTWRITEBYTECODE is set: the suite starts thousands of Python
# processes (graders, sandboxes, candidates' commands) that import the kit, and each would compile it again.
PYTEST = env -u PYTHONDONTWRITEBYTECODE $(BIN)/python -m pytest
test: $(STAMP) debs-test
	$(PYTEST) -q -n $(WORKERS) $(XDIST) --durations=25

# Every test with every parameter of the sampled ones and every turn of the rotating files
# (tests/sampling.py): every live exercise, replay, hostile row and bench, the bundle's whole self-check.
# Before a release, or after a change to what they run.
test-full: $(STAMP) debs-test
	SUITE_FULL=1 $(PYTEST) -q -n $(WORKERS) $(XDIST) --durations=25

# The inner loop: every test but the slow ones and those that took a second or more in the last
# recorded run (tests/durations.json, tests/fast_tier.py), every criterion judged from recorded runs
# (tests/fixtures/runs), on three workers (under 2 minutes on two cores). `make test` runs them all.
FAST_WORKERS ?= 3
test-fast: $(STAMP)
	FAST_TIER=1 $(PYTEST) -q -n $(FAST_WORKERS) $(XDIST) -m "not slow" --durations=10

# Record how long each test but the slow ones takes (tests/durations.json): what the fast tier leaves out.
durations: $(STAMP)
	RECORD_DURATIONS=1 $(PYTEST) -q -n $(FAST_WORKERS) $(XDIST) -m "not slow"

# Record the reference's and every chaff's runs for the fast tests (after a change to a submission,
# a scenario, the gateway plan or how runs are made; the fast tests say when a record is stale).
fixtures: $(STAMP) debs-demo
	$(BIN)/python tests/recorded.py

# The quality gate, run by CI before the tests: fake_server/, grader/, tests/ and bench/ are linted, formatted and
# type-checked strictly, and so is the stub client (mypy's files and settings are in pyproject.toml).
check: $(STAMP)
	$(BIN)/python -m ruff check fake_server grader tests bench
	$(BIN)/python -m ruff format --check fake_server grader tests bench
	$(BIN)/python -m mypy

bench: $(STAMP)
	$(BIN)/python -m bench.fidelity
	$(BIN)/python -m bench.cpu
	$(BIN)/python -m bench.loadgen_ttft
	$(BIN)/python -m bench.grade_time

# Ten minutes of mixed traffic, faults and reconfiguration against one fake server: memory and
# descriptors flat, no leak, a complete ledger (bench/results/soak.json; CI runs 20 s of it).
soak: $(STAMP)
	$(BIN)/python -m bench.soak --minutes 10

# The long hostile runs CI leaves out: the busy loop and the sleeper as the load generator (90 s
# each), every hostile program in every row of the sandbox's matrix (cgroup v1 and v2, read-only
# cgroups, user namespaces; grader/sandbox/README.md) and the Job's capabilities one by one, every
# criterion graded five times for determinism, each replay held to its recording case for case,
# then the whole selftest on a loaded machine with each timing margin (bench/results/loaded.json).
hostile-full: $(STAMP)
	HOSTILE_FULL=1 SUITE_FULL=1 $(BIN)/python -m pytest -q tests/hostile tests/rooms/grading/test_determinism.py tests/rooms/grading/test_replay.py \
		tests/reference/test_independent_submission.py
	$(BIN)/python -m bench.loaded

# The grader's image (Containerfile), for the Kubernetes Indexed Job (docs/grading-many.md), built by the
# first of podman, docker (its engine answering) or buildah found, or ENGINE. BASE is the image it starts
# from: any Debian-like image with Python $(IMAGE_PYTHON) and venv (the public slim image by default, or one
# made locally where no registry is reached). The Python packages are gathered first as wheels for that
# Python and this machine's architecture, pinned to the versions in .venv (the ones the tests ran), with
# this machine's pip and its index; the build then asks no package index. BUILD_FLAGS go to the engine.
IMAGE ?= serving-takehome-grader:0.1.0
BASE ?= docker.io/library/python:3.11-slim-bookworm
IMAGE_PYTHON ?= 3.11
WHEEL_ARCH ?= $(shell uname -m)
ENGINE ?=
BUILD_FLAGS ?=
WHEELS := build/wheels
MANYLINUX := $(foreach v,5 12 17 24 26 27 28 31 34 35 36,--platform manylinux_2_$(v)_$(WHEEL_ARCH)) \
	--platform manylinux2014_$(WHEEL_ARCH)

wheels: $(STAMP)
	rm -rf $(WHEELS) && mkdir -p $(WHEELS)
	$(BIN)/python -c "import tomllib; p = tomllib.load(open('pyproject.toml', 'rb'))['project']; \
		print('\n'.join(p['dependencies'] + p['optional-dependencies']['candidate'] + ['setuptools>=77']))" \
		> build/image-requirements.txt
	$(BIN)/python -m pip freeze --exclude-editable > build/image-constraints.txt
	$(BIN)/python -m pip download --quiet --dest $(WHEELS) --only-binary=:all: --implementation cp \
		--python-version $(IMAGE_PYTHON) $(MANYLINUX) -r build/image-requirements.txt -c build/image-constraints.txt

image: wheels
	@engine="$(ENGINE)"; \
	if [ -z "$$engine" ]; then \
		if command -v podman >/dev/null; then engine=podman; \
		elif command -v docker >/dev/null && docker info >/dev/null 2>&1; then engine=docker; \
		elif command -v buildah >/dev/null; then engine=buildah; \
		else echo "make image: no podman, docker (with its engine running) or buildah here; set ENGINE" >&2; exit 2; fi; \
	fi; \
	build="build"; [ "$$engine" = buildah ] && build="bud"; \
	echo "$$engine $$build -f Containerfile --build-arg BASE=$(BASE) -t $(IMAGE) $(BUILD_FLAGS) ."; \
	$$engine $$build -f Containerfile --build-arg BASE=$(BASE) -t $(IMAGE) $(BUILD_FLAGS) .

# The grader's image built from a local base (tests/pods/images.py: debootstrap, then podman import), the
# emitted Job's pods run under podman with the pod's own security settings over a round of six, merged
# and compared with the same round graded here, then the hostile programs inside the pod: about 25
# minutes on two cores, so not part of `make test`. Needs root and podman with runc (installed here
# when missing).
DEBS_IMAGE := podman:podman runc:runc debootstrap:debootstrap
test-image: $(STAMP) debs-test
	@$(call apt_install,$(DEBS_IMAGE))
	POD_TEST=1 $(BIN)/python -m pytest -q tests/pods
	@echo "its outcome, date, commit and figures (image size, seconds per pod and per grade, report lines): bench/results/pods.json"

schemas: $(STAMP)
	$(BIN)/python -m grader.kit.schemas_build

clean:
	rm -rf $(VENV) .pytest_cache grade-report build
