# Two entry points: `make run` starts the app, `make test` runs the whole test suite.
# Both create .venv and install what they need on first use.
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
PIP := $(VENV)/bin/pip

.PHONY: run test lint bench fuzz-long clean

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

test: $(VENV)/.test-installed
	$(VENV)/bin/ruff check .
	$(PY) -m pytest $(PYTEST_ARGS)

lint: $(VENV)/.test-installed
	$(VENV)/bin/ruff check .

bench: $(VENV)/.test-installed
	$(PY) scripts/bench.py

fuzz-long: $(VENV)/.test-installed
	$(PY) scripts/fuzz_long.py $(FUZZ_ARGS)

clean:
	rm -rf $(VENV) .venv-ds0195 .pytest_cache .torch_extensions

.PHONY: load
load: $(VENV)/.test-installed  ## 20 concurrent headless-Chromium sessions on loopback; LOAD_ARGS="--sessions 20 --duration 60"
	$(PY) scripts/load_test.py $(LOAD_ARGS)

.PHONY: load-ws
load-ws: $(VENV)/.test-installed  ## 50 concurrent websocket sessions (no browser): the server alone; LOAD_ARGS="--sessions 50"
	$(PY) scripts/load_test_ws.py $(LOAD_ARGS)
