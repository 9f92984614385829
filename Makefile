# The two commands README.md promises: `make demo` (the main job) and `make test`.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
export SAM_CLI_TELEMETRY := 0

.PHONY: setup demo test test-slow lint check-templates clean

setup: $(STAMP)

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -e '.[dev]'
	touch $(STAMP)

demo: setup
	$(BIN)/orderbatch demo

lint: setup
	$(BIN)/ruff check src functions tests
	$(BIN)/ruff format --check src functions tests
	$(BIN)/mypy

# Two workers, a test file each at a time: most of the suite waits on timeouts and backoffs, not the CPU.
test: lint
	$(BIN)/pytest -n 2 --dist loadfile

# Large batches and `sam build`: minutes, not seconds. CI runs them after `make test`.
test-slow: setup
	$(BIN)/pytest -m slow

clean:
	rm -rf $(VENV) .aws-sam .orderbatch .pytest_cache .mypy_cache .ruff_cache
