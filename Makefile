# Entry points: `make app` (set up, then open the app on its first lesson), `make demo` / `make table` (set up, then
# the default comparison table), `make test` (set up, then ruff and every test) and `make test-fast` (set up, then the
# tests not marked slow). Both run on pytest-xdist workers: WORKERS=auto (the default) starts one per core,
# WORKERS=4 four, WORKERS=0 runs in this process (docs/testing.md).
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
WORKERS ?= auto

.PHONY: setup app demo table test test-fast lint clean

setup: $(VENV)/.installed

# torch first, pinned to the CPU build on this machine's disk; the project's range (>=2.1) then installs nothing more.
$(VENV)/.installed: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install -q torch==2.13.0
	$(BIN)/pip install -q -e '.[all]'
	touch $@

app: setup
	$(BIN)/collsim app

demo: table

table: setup
	$(BIN)/collsim cost --op allreduce --ranks 8 --size 1KiB:1GiB:8 --alpha 2us --bandwidth 25GB/s

lint: setup
	$(BIN)/ruff check .

test: setup lint
	$(BIN)/python -m pytest -q -n $(WORKERS) --dist loadgroup

test-fast: setup
	$(BIN)/python -m pytest -q -n $(WORKERS) --dist loadgroup -m "not slow"

clean:
	rm -rf $(VENV) build *.egg-info .pytest_cache
