# The two commands of the README: `make demo` and `make test`. Both set everything up
# themselves on a fresh clone (a venv in .venv, npm packages under .cache).
PY ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: setup demo test test-pythons lint typecheck unit conformance bench-quick clean

$(STAMP): pyproject.toml setup.py mcpactor/tracing/_hooks.c
	test -x $(BIN)/python || $(PY) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip
	$(BIN)/python -m pip install -q -e '.[dev]'
	touch $(STAMP)

setup: $(STAMP)

demo: setup
	$(BIN)/mcpactor demo

lint: setup
	$(BIN)/ruff check .

typecheck: setup
	$(BIN)/mypy

unit: setup
	scripts/npm-interop.sh install
	scripts/scaleout-deps.sh install
	$(BIN)/python -m pytest -q

# The official conformance suite (@modelcontextprotocol/conformance): server mode
# against examples/everything_server.py over HTTP, client mode with
# examples/conformance_client.py (the auth/* client scenarios too). Any failure or
# warning fails the target.
conformance: setup
	scripts/conformance.sh install
	CONFORMANCE_VERSION=0.2.0-alpha.12 scripts/conformance.sh install
	scripts/conformance-server.sh
	MCPACTOR_HTTP_SERVER=hypercorn CONFORMANCE_SUITES="stable alpha-2026" scripts/conformance-server.sh
	MCPACTOR_SSE_RESPONSE=1 CONFORMANCE_SUITES="stable alpha-2026" scripts/conformance-server.sh
	scripts/conformance-client.sh
	scripts/conformance-auth.sh

test: lint typecheck unit conformance

# The unit tests on Python 3.12 and 3.13 too, each in a venv under .cache (CI runs it).
test-pythons:
	scripts/test-pythons.sh

bench-quick: setup
	$(BIN)/python -m benchmarks --quick

clean:
	rm -rf $(VENV) .cache .pytest_cache .mypy_cache .ruff_cache
