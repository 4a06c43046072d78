# Each target creates .venv and installs the kit into it if that has not been done yet.
PY ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: demo test bench schemas clean

$(STAMP): pyproject.toml
	test -x $(BIN)/python || $(PY) -m venv $(VENV)
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
