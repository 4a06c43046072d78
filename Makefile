# Each target creates .venv and installs the kit into it if that has not been done yet.
PY ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: demo test bench schemas clean

# The grader's sandbox needs bubblewrap: installed when missing and this is root (else it runs UNSANDBOXED, and says so).
$(STAMP): pyproject.toml
	command -v bwrap >/dev/null || [ "$$(id -u)" != 0 ] || ! command -v apt-get >/dev/null || \
		{ apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq bubblewrap; }
	test -x $(BIN)/python || $(PY) -m venv $(VENV)
	command -v chromium >/dev/null 2>&1 || { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium; } \
		|| echo "warning: could not install Debian chromium; the report.html screenshot test will be skipped" >&2
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[test]'
	touch $(STAMP)

demo: $(STAMP)
	$(BIN)/python -m fake_server.demo

test: $(STAMP)
	$(BIN)/python -m pytest -q

bench: $(STAMP)
	$(BIN)/python -m bench.fidelity
	$(BIN)/python -m bench.loadgen_ttft

schemas: $(STAMP)
	$(BIN)/python -m grader.schemas_build

clean:
	rm -rf $(VENV) .pytest_cache
