# Two commands do all set-up on a fresh machine:
#   make serve   install, create the database, import the Liger data and reruns, serve on 127.0.0.1:5000
#                (without ../shared: Liger-Kernel's newest CSVs from GitHub at the commit pinned in app/upstream.py)
#   make test    install (Chromium too) and run the whole test suite
# KERNELINDEX_DATABASE_URL picks the database (default: SQLite in instance/).

PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
LIGER_DATA ?= $(wildcard ../shared/data/liger)
HOST ?= 127.0.0.1
PORT ?= 5000

.PHONY: install serve data test browser-deps

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)

$(VENV)/.installed: $(BIN)/python pyproject.toml
	$(BIN)/pip install -q --upgrade pip
	$(BIN)/pip install -q torch==2.13.0
	$(BIN)/pip install -q -e '.[test]'
	touch $@

install: $(VENV)/.installed

data: install
	$(BIN)/flask --app wsgi db upgrade
	@if [ -n "$(LIGER_DATA)" ]; then $(BIN)/flask --app wsgi import liger $(LIGER_DATA); \
	else $(BIN)/flask --app wsgi import liger-upstream || echo "could not fetch Liger-Kernel's CSVs from GitHub;" \
	"offline, pass a local copy: make serve LIGER_DATA=<folder of the Liger CSVs, e.g. ../shared/data/liger>"; fi
	@bundles="$$(find benchmarks/results -name '*.jsonl' | sort)"; \
	if [ -n "$$bundles" ]; then $(BIN)/flask --app wsgi import kernelindex $$bundles; fi

serve: data
	$(BIN)/flask --app wsgi run --host $(HOST) --port $(PORT)

browser-deps:
	@test -x /usr/bin/chromium || (apt-get update -q && apt-get install -y -q chromium)

test: install browser-deps
	$(BIN)/python -m pytest -q $(PYTEST_ARGS)
