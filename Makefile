# Two set-up commands: `make run` and `make test`. Both create .venv on first use.
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed-$(shell cksum pyproject.toml | cut -d' ' -f1)

.PHONY: install warm run test lint format bench clean

## Python must keep the bytecode it compiles: the suite starts hundreds of Python
## processes (xdist workers, workers and APIs under test, CLIs), and each would compile
## numpy, scipy, numba, FastAPI and the project from source again (3.1 instead of 1.1 s
## of CPU to import the API). A PYTHONDONTWRITEBYTECODE=1 inherited from the shell
## does not reach the commands below.
unexport PYTHONDONTWRITEBYTECODE

## --no-compile: a module's bytecode is written at its first import, not for every file
## of every package at install (37 instead of 55 s on a 2-core host)
$(STAMP): pyproject.toml
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet --no-compile -e '.[test]'
	rm -f $(VENV)/.installed-*
	touch $@

install: $(STAMP)

## compile the learners' numba kernels once into the cache (a no-op when it is complete):
## two processes side by side on two cores share the families (each takes a family once
## those whose kernels it calls are compiled: learners/warm_claims.py), then one full call
## loads every kernel, compiles whatever they left out and marks the cache complete;
## the worker's own compiled pass (reading a batch's task names) goes into the same cache
warm: install
	@if ! $(PY) -c "import sys, learners; sys.exit(not learners.kernels_cached())"; then \
	  claims=$$(mktemp -d); \
	  $(PY) -c "import learners; learners.warm_kernels(claims='$$claims')" & \
	  $(PY) -c "import learners; learners.warm_kernels(claims='$$claims')"; \
	  wait; rm -rf "$$claims"; \
	fi
	$(PY) -m service.warm

## run the whole service on one machine (embedded Redis unless REDIS_URL is set)
run: warm
	$(VENV)/bin/omtl up

## test processes: one more than the cores. Many tests spend seconds waiting with their
## core idle (for a worker or an API under test, a lease to lapse, a server to restart);
## the extra process fills those waits. On two cores the test phase takes about a fifth
## less with three than with two (bench/results/throughput.md). At most 8: the databases
## a run on TEST_REDIS_URL may use, one per process.
TEST_WORKERS ?= $(shell n=$$(nproc 2>/dev/null || getconf _NPROCESSORS_ONLN 2>/dev/null || echo 1); \
	n=$$((n + 1)); [ $$n -gt 8 ] && n=8; echo $$n)

## the full test suite (real Redis servers are started by the tests themselves)
test: warm
	$(PY) -m pytest -n $(TEST_WORKERS) --dist loadgroup -q

lint: install
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .
	$(VENV)/bin/mypy

format: install
	$(VENV)/bin/ruff format .
	$(VENV)/bin/ruff check --fix .

bench: install
	$(PY) -m pip install --quiet -e '.[bench]'
	$(PY) -m bench.throughput

clean:
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache .hypothesis *.egg-info
