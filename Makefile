# Two entry points: `make run` starts the app, `make test` runs the whole test suite.
# Both create .venv and install what they need on first use.
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
PIP := $(VENV)/bin/pip

#: pytest-xdist workers; "auto" is one per core (2 on CI's machine). PYTEST_WORKERS=0 runs in one process.
PYTEST_WORKERS ?= auto

.PHONY: run test test-install lint pytest bench fuzz-long clean

$(VENV)/.base-installed: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PIP) install -q --upgrade pip
	$(PIP) install -q -e .
	touch $@

$(VENV)/.test-installed: $(VENV)/.base-installed pyproject.toml scripts/install-test-deps.sh
	bash scripts/install-test-deps.sh $(VENV)
	touch $@

run: $(VENV)/.base-installed
	$(VENV)/bin/streamlit run app.py

test: lint pytest

test-install: $(VENV)/.test-installed

lint: $(VENV)/.test-installed
	$(VENV)/bin/ruff check .

# --dist loadgroup: tests spread over the workers as they free up, except that a module marked
# xdist_group (one whose module fixture starts a browser, a server or a DeepSpeed run) stays on one worker;
# --durations: the 30 longest tests, where CI's time budget goes
pytest: $(VENV)/.test-installed
	$(PY) -m pytest -n $(PYTEST_WORKERS) --dist loadgroup --durations=30 $(PYTEST_ARGS)

bench: $(VENV)/.test-installed
	$(PY) scripts/bench.py

.PHONY: bench-versions versions-parity
bench-versions: $(VENV)/.test-installed  ## validation time per config for each release profile
	$(PY) scripts/bench_versions.py $(BENCH_ARGS)

versions-parity: $(VENV)/.test-installed  ## held-out parity with the seven installed releases, with the initialize proof
	$(PY) scripts/versions_parity.py --first-seed 1000 --seeds 3 --corpus --prove $(PARITY_ARGS)

.PHONY: zero3-hook-cost
zero3-hook-cost: $(VENV)/.test-installed  ## ZeRO-3's host cost per module per pass on this CPU (real deepspeed.initialize)
	$(PY) scripts/zero3_hook_cost.py

.PHONY: releases-all
releases-all: $(VENV)/.test-installed  ## the real-release tests CI runs a slice of, on every installed release
	DSCONFIG_ALL_RELEASES=1 $(PY) -m pytest -n $(PYTEST_WORKERS) --dist loadgroup tests/test_presets_deepspeed.py \
		tests/test_memory_buffers_hunt.py tests/test_versions_initialize.py

.PHONY: presets-releases
presets-releases: $(VENV)/.test-installed  ## every preset trained on every release of its verified_with (CI: a slice)
	DSCONFIG_ALL_RELEASES=1 $(PY) -m pytest -n $(PYTEST_WORKERS) --dist loadgroup tests/test_presets_deepspeed.py

fuzz-long: $(VENV)/.test-installed
	$(PY) scripts/fuzz_long.py $(FUZZ_ARGS)

.PHONY: app-corpus
app-corpus: $(VENV)/.test-installed  ## every page of the app renders every readable corpus config (CI: a covering slice)
	DSCONFIG_FULL_CORPUS=1 $(PY) -m pytest -n $(PYTEST_WORKERS) tests/test_app_corpus.py

.PHONY: fix-differential
fix-differential: $(VENV)/.test-installed  ## every corpus mutation fixed (safe / all) and judged by DeepSpeed 0.19.8 (CI: a slice)
	$(PY) scripts/fix_differential.py

clean:
	rm -rf $(VENV) .venv-ds0195 .venv-ds .pytest_cache .torch_extensions

# The room of issue 15: people join over half a minute and change something every ~5 s for a minute.
ROOM_ARGS ?= --sessions 20 --duration 60 --pace 5 --ramp 1.5
WS_ARGS ?= --sessions 50 --duration 60 --pace 5 --ramp 0.6

.PHONY: load load-floor load-ws load-memory load-one load-paste session-cost
load: $(VENV)/.test-installed  ## 20 headless-Chromium sessions on one server (a room); LOAD_ARGS to change
	$(PY) scripts/load_test.py $(or $(LOAD_ARGS),$(ROOM_ARGS))

load-floor: $(VENV)/.test-installed  ## the same room against scripts/room_floor (the flow, nothing else drawn)
	$(PY) scripts/load_test.py $(or $(LOAD_ARGS),$(ROOM_ARGS)) --app scripts/room_floor/app.py

load-ws: $(VENV)/.test-installed  ## 50 websocket sessions (no browser): the server alone; LOAD_ARGS to change
	$(PY) scripts/load_test_ws.py $(or $(LOAD_ARGS),$(WS_ARGS))

load-memory: $(VENV)/.test-installed  ## server memory with 100 idle sessions held
	$(PY) scripts/load_test_ws.py --hold-idle 100 --ramp 0.05

load-one: $(VENV)/.test-installed  ## one Chromium user: stage flips for 30 s, then every page 5 times
	$(PY) scripts/load_test.py --sessions 1 --duration 30 --tour 5

session-cost: $(VENV)/.test-installed  ## a room session's main-thread cost per step (setup, flips), app then floor
	$(PY) scripts/session_cost.py --runs 2
	$(PY) scripts/session_cost.py --runs 2 --app scripts/room_floor/app.py

load-paste: $(VENV)/.test-installed  ## the tab while a config at the size limit is pasted, typed into and imported
	$(PY) scripts/paste_test.py $(LOAD_ARGS)
