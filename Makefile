# The README's two commands: `make demo` (the main job) and `make test` (the test suite).
# Each sets up its own virtual environment on a fresh machine; nothing else is needed.
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python

.PHONY: demo test lint bench

$(VENV)/.runtime: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q -e '.[demo]'
	touch $@

$(VENV)/.test: $(VENV)/.runtime
	$(PY) -m pip install -q -e '.[demo,test]'
	touch $@

demo: $(VENV)/.runtime
	$(PY) -m retrograd demo

test: $(VENV)/.test
	$(PY) -m ruff check retrograd tests benchmarks
	$(PY) -m pytest -n 2 -p no:cacheprovider

bench: $(VENV)/.test
	$(PY) -m benchmarks
