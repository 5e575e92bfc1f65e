# The README's two commands: `make demo` (the main job) and `make test` (the test suite).
# Each sets up its own virtual environment on a fresh machine; nothing else is needed.
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python

.PHONY: demo test compat lint bench

$(VENV)/.runtime: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q -e '.[demo]'
	@$(GRAPHVIZ)
	touch $@

$(VENV)/.test: $(VENV)/.runtime
	$(PY) -m pip install -q -e '.[demo,test,docs]'
	touch $@

# The demo draws its graph with the Graphviz program `dot`: installed here when missing and we are root.
GRAPHVIZ = command -v dot >/dev/null 2>&1 || { if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then \
	echo "installing Graphviz (dot) for the graph pictures"; { apt-get update -qq && apt-get install -y -qq graphviz \
	>/dev/null; } || echo "note: apt-get could not install graphviz"; else echo "note: Graphviz's 'dot' is missing," \
	"so graph pictures are written as DOT text only (apt-get install graphviz / brew install graphviz)"; fi; }

demo: $(VENV)/.runtime
	@$(GRAPHVIZ)
	$(PY) -m retrograd demo

test: $(VENV)/.test
	$(PY) -m ruff check retrograd tests benchmarks
	$(PY) -m pytest -n 2 -p no:cacheprovider
	$(PY) tests/compat --check

# PyTorch's own autograd tests under torch and under retrograd (tests/compat/__main__.py): the table, and
# whether tests/compat/expected_failures.txt is exact. PYTORCH_TESTS=path or ARGS="--tests path" to point it.
compat: $(VENV)/.test
	$(PY) tests/compat --check $(ARGS)

bench: $(VENV)/.test
	$(PY) -m benchmarks
