# The two commands README.md promises: `make demo` (the main job) and `make test`.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
export SAM_CLI_TELEMETRY := 0

# The local cloud, a distribution of its own that the app depends on (README.md, "Map").
LOCAL_CLOUD := packages/sam-local-cloud
# Every install comes from a lock with exact versions and hashes (docs/dependencies.md):
# DEV_LOCK for the tools and tests, FUNCTIONS_LOCK for what `sam build` packages with the functions.
DEV_LOCK := requirements/dev.lock
FUNCTIONS_LOCK := functions/requirements.txt
# uv, pinned with hashes in requirements/uv.txt, in a venv of its own: `uv pip sync` leaves in .venv only
# what the lock lists.
UV_VENV := .cache/uv
UV := $(UV_VENV)/bin/uv
# One resolution for every Python from 3.11 and every platform, so the lock installs on any of them.
LOCK_FLAGS := --universal --python-version 3.11 --generate-hashes --custom-compile-command "make lock" --quiet
# `make lock UPGRADE="moto==5.2.6 botocore"` moves those packages (to a version, or to the newest the rest
# allows) and keeps every other pin; `make lock UPGRADE_ALL=1` re-resolves everything to the newest.
UPGRADE ?=
UPGRADE_ALL ?=
UPGRADE_FLAGS := $(foreach package,$(UPGRADE),--upgrade-package '$(package)') $(if $(UPGRADE_ALL),--upgrade)

.PHONY: setup lock upgrade-moto demo test test-slow lint check-templates statemachine asl-validator clean

setup: $(STAMP)

# A changed lock or pyproject.toml re-installs; sync also removes whatever the lock no longer lists.
# `uv venv` is seconds faster than `python -m venv` (no ensurepip); pip comes from the lock instead.
# Bytecode is compiled here, once: where PYTHONDONTWRITEBYTECODE is set, nothing else writes it, and every
# process the local cloud starts (data plane, runtime servers) compiled moto and boto3 again (1.7 s each).
# The project itself goes in last, editable, without dependencies (the lock has them all) and built by
# the lock's setuptools.
$(STAMP): $(DEV_LOCK) pyproject.toml $(LOCAL_CLOUD)/pyproject.toml $(UV)
	test -x $(BIN)/python || $(UV) venv --quiet --no-python-downloads --python $(PYTHON) $(VENV)
	$(UV) pip sync --quiet --python $(BIN)/python --require-hashes --compile-bytecode $(DEV_LOCK)
	$(UV) pip install --quiet --python $(BIN)/python --no-deps --no-build-isolation -e $(LOCAL_CLOUD) -e .
	$(BIN)/python -m compileall -q -j 0 src $(LOCAL_CLOUD)/src
	touch $(STAMP)

$(UV): requirements/uv.txt
	$(PYTHON) -m venv $(UV_VENV)
	$(UV_VENV)/bin/pip install --quiet --require-hashes --no-deps -r requirements/uv.txt
	touch $(UV)

# After changing a dependency in pyproject.toml, requirements/venv.in or functions/requirements.in, or to
# move a pinned one (UPGRADE above). The functions resolve on the tools' pins, so tests and Lambda agree.
lock: $(UV)
	$(UV) pip compile $(LOCK_FLAGS) $(UPGRADE_FLAGS) requirements/uv.in -o requirements/uv.txt
	$(UV) pip compile $(LOCK_FLAGS) $(UPGRADE_FLAGS) --override requirements/overrides.txt --no-emit-package sam-local-cloud --extra dev pyproject.toml requirements/venv.in -o $(DEV_LOCK)
	$(UV) pip compile $(LOCK_FLAGS) $(UPGRADE_FLAGS) -c $(DEV_LOCK) functions/requirements.in -o $(FUNCTIONS_LOCK)

# Move moto to another release: pin it, re-lock (every other pin kept), install, then list each target the
# engine hooks or imports that the release changed (docs/architecture.md, "Upgrading moto").
upgrade-moto: $(UV)
	@test -n "$(VERSION)" || { echo "usage: make upgrade-moto VERSION=x.y.z"; exit 2; }
	sed -i -E 's/"moto\[server\]==[^"]+"/"moto[server]==$(VERSION)"/' $(LOCAL_CLOUD)/pyproject.toml
	$(MAKE) lock UPGRADE=moto==$(VERSION)
	$(MAKE) setup
	$(BIN)/python -m sam_local_cloud.moto_seam.fingerprints

demo: setup
	$(BIN)/orderbatch demo

lint: setup
	$(BIN)/ruff check src functions tests packages
	$(BIN)/ruff format --check src functions tests packages
	$(BIN)/mypy
	$(BIN)/mypy --strict $(LOCAL_CLOUD)/src/sam_local_cloud/moto_seam $(LOCAL_CLOUD)/src/sam_local_cloud/stepfunctions
	$(BIN)/pylint --jobs 2 src/orderbatch functions/order_processing functions/handlers $(LOCAL_CLOUD)/src/sam_local_cloud
	$(BIN)/python -m orderbatch.workflow_source --check

# Four workers, a test file each at a time, the longest first (tests/conftest.py): the suite waits on
# function timeouts, backoffs and processes it starts, and two workers left a third of the two cores idle
# (docs/testing.md). The 30 slowest tests close the output, so that drift shows.
test: lint
	$(BIN)/pytest -n 4 --dist loadfile --no-loadscope-reorder --durations=30

# Large batches, `sam build` and the ASL validator: minutes, not seconds. CI runs them after `make test`.
# These are CPU-bound: one worker per core, each test sent alone to the first free worker, the longest first
# (tests/conftest.py), so the two workers finish together.
test-slow: setup asl-validator
	$(BIN)/pytest -m slow -n 2 --dist load --maxschedchunk 1 --durations=30

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
