# The two commands README.md promises: `make demo` (the main job) and `make test`.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
export SAM_CLI_TELEMETRY := 0

.PHONY: setup demo test test-slow lint check-templates statemachine asl-validator clean

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
	$(BIN)/python -m orderbatch.workflow_source --check

# Two workers, a test file each at a time: most of the suite waits on timeouts and backoffs, not the CPU.
test: lint
	$(BIN)/pytest -n 2 --dist loadfile

# Large batches, `sam build` and the ASL validator: minutes, not seconds. CI runs them after `make test`.
test-slow: setup asl-validator
	$(BIN)/pytest -m slow

# After editing statemachine/order_batch.workflow.yaml: expand its aliases into the file the template deploys.
statemachine: setup
	$(BIN)/python -m orderbatch.workflow_source

# The npm ASL validator the slow template tests run on the deployed definition (pinned; needs node).
ASL_VALIDATOR_VERSION := 4.0.0
asl-validator: .cache/npm/node_modules/.bin/asl-validator

.cache/npm/node_modules/.bin/asl-validator:
	@if command -v npm >/dev/null; then \
		npm install --no-audit --no-fund --prefix .cache/npm asl-validator@$(ASL_VALIDATOR_VERSION); \
	else echo "npm not found: the ASL validator test is skipped without node"; fi

clean:
	rm -rf $(VENV) .aws-sam .orderbatch .pytest_cache .mypy_cache .ruff_cache .cache
