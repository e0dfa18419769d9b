# Two commands on a fresh machine with Python 3.11+: `make demo` and `make test`.
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed

.PHONY: demo test lint typecheck bench conformance conformance-direct clean

$(STAMP): pyproject.toml Makefile
	@$(PYTHON) -c 'import sys; sys.exit(0 if sys.version_info >= (3, 11) else "checkrein needs Python 3.11 or newer")'
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[test,report]'
	# Test only: an independent C2SP witness (and its tlog library) for the audit tests. It declares
	# Python >= 3.12 but runs on 3.11 (tests/audit/test_witness.py); never a product dependency.
	$(BIN)/python -m pip install --quiet --ignore-requires-python 'aics-witness==0.1.0' 'aics-tlog==0.2.1'
	@touch $(STAMP)

demo: $(STAMP)
	$(BIN)/checkrein demo

test: $(STAMP)
	$(BIN)/ruff check src tests benchmarks
	$(BIN)/mypy
	$(BIN)/python -m pytest

lint: $(STAMP)
	$(BIN)/ruff check src tests benchmarks

typecheck: $(STAMP)
	$(BIN)/mypy

bench: $(STAMP)
	$(BIN)/python benchmarks/overhead.py
	$(BIN)/python benchmarks/decide.py
	$(BIN)/python benchmarks/audit.py
	$(BIN)/python benchmarks/detection.py

# The MCP conformance suite (installs Node 22 and the suite from npm into a cache on first use):
# `conformance` compares the fixture server directly with checkrein in front of it (exit 1 when a
# scenario passes directly and fails through checkrein); `conformance-direct` runs only the fixture.
# Extra runner options: make conformance CONFORMANCE_ARGS="--reference DIR --out DIR"
CONFORMANCE_ARGS ?=
conformance: $(STAMP)
	.ci/conformance.sh $(CONFORMANCE_ARGS)

conformance-direct: $(STAMP)
	.ci/conformance.sh --direct-only $(CONFORMANCE_ARGS)

clean:
	rm -rf $(VENV) build dist .pytest_cache .mypy_cache .ruff_cache
