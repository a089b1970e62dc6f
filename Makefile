# The commands of the README: `make demo`, `make check` and `make test`. Each sets up what it
# needs: a virtual environment, PyTorch (the machine's CPU wheel unless one is already there), a
# C++ compiler for the native search core (g++ from the distribution when there is none), this
# package with its extras (building the core), and the engines the evaluation plays (Stockfish,
# Fairy-Stockfish, Glaurung) from the distribution when they are missing from /usr/games;
# `make test` also installs Chromium, in which the HTML report is tested.
# `make check` is the fast tier, for after each change: ruff and the tests not marked `slow`
# (under a minute on 2 cores). `make test` is the whole suite, slow tests included: what CI
# runs (.ci/run) and what a change must pass before it is committed. Both spread the tests over
# every core, one file a worker (pytest-xdist: a file's module fixtures are built once).

PYTHON ?= python3
VENV   ?= .venv
PY     := $(VENV)/bin/python
TORCH  ?= torch==2.13.0
SUDO   := $(shell [ "$$(id -u)" = 0 ] || echo sudo)
STAMP  := $(VENV)/.frugalzero-installed
ENGINES := /usr/games/stockfish /usr/games/fairy-stockfish /usr/games/glaurung
COMPILER := /usr/bin/g++
NATIVE := $(shell find native -type f 2>/dev/null)
BROWSER := /usr/bin/chromium

.PHONY: demo check test lint setup engines browser clean

demo: setup engines
	$(PY) -m frugalzero run --preset demo

check: setup engines
	$(PY) -m ruff check src tests
	$(PY) -m pytest -q -n auto --dist loadfile -m "not slow"

test: setup engines browser
	$(PY) -m ruff check src tests
	$(PY) -m pytest -q -n auto --dist loadfile

lint: setup
	$(PY) -m ruff check src tests
	$(PY) -m ruff format --check src tests

setup: $(STAMP)

# the package is rebuilt whenever the native core's sources change
$(STAMP): pyproject.toml $(NATIVE) | $(COMPILER)
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -c "import torch" 2>/dev/null || $(PY) -m pip install -q "$(TORCH)"
	$(PY) -m pip install -q -e ".[dev,ray,onnx]"
	touch $@

engines: $(ENGINES)

browser: $(BROWSER)

# a missing engine (or the browser) comes from its Debian package, named like the binary
$(ENGINES) $(BROWSER) $(COMPILER):
	$(SUDO) apt-get update -qq
	$(SUDO) DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $(notdir $@)

clean:
	rm -rf $(VENV) build *.egg-info .pytest_cache .ruff_cache
