# Two commands do all set-up on a fresh machine:
#   make serve   install, create the database, import the Liger data and reruns (re-judged under the current
#                correctness policy), serve on 127.0.0.1:5000
#                (without ../shared: Liger-Kernel's newest CSVs from GitHub at the commit pinned in app/upstream.py)
#   make test    install (Chromium too) and run the whole test suite
#   make worker  consume the rerun queues beside `make serve`: one consumer per GPU, or one on the CPU
#                (make worker WORKER_ARGS="--target cpu --workers 2"; SQLite database and queue in instance/)
# KERNELINDEX_DATABASE_URL picks the database (default: SQLite in instance/).
# make serve is local development mode: it generates a secret key once, keeps it in
# instance/secret_key (mode 600) and serves PUBLIC_URL (make serve PUBLIC_URL=http://name:5000).

PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
LIGER_DATA ?= $(wildcard ../shared/data/liger)
HOST ?= 127.0.0.1
PORT ?= 5000
PUBLIC_URL ?= http://$(HOST):$(PORT)
SECRET_FILE := instance/secret_key
# The flask commands of make data/serve: a secret from the environment or instance/secret_key, and the public URL.
LOCAL_FLASK = KERNELINDEX_SECRET_KEY="$${KERNELINDEX_SECRET_KEY:-$$(cat $(SECRET_FILE))}" \
	KERNELINDEX_PUBLIC_URL="$${KERNELINDEX_PUBLIC_URL:-$(PUBLIC_URL)}" $(BIN)/flask --app wsgi

WORKER_ARGS ?=

.PHONY: install serve data test browser-deps worker

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)

$(VENV)/.installed: $(BIN)/python pyproject.toml
	$(BIN)/pip install -q --upgrade pip
	$(BIN)/pip install -q torch==2.13.0
	$(BIN)/pip install -q -e '.[test]'
	touch $@

install: $(VENV)/.installed

$(SECRET_FILE):
	@mkdir -p $(dir $@)
	@umask 077 && $(PYTHON) -c 'import secrets; print(secrets.token_urlsafe(32))' > $@
	@echo "generated a secret key for local use in $@"

data: install $(SECRET_FILE)
	$(LOCAL_FLASK) db upgrade
	@if [ -n "$(LIGER_DATA)" ]; then $(LOCAL_FLASK) import liger $(LIGER_DATA); \
	else $(LOCAL_FLASK) import liger-upstream || echo "could not fetch Liger-Kernel's CSVs from GitHub;" \
	"offline, pass a local copy: make serve LIGER_DATA=<folder of the Liger CSVs, e.g. ../shared/data/liger>"; fi
	@bundles="$$(find benchmarks/results -name '*.jsonl' | sort)"; \
	if [ -n "$$bundles" ]; then $(LOCAL_FLASK) import kernelindex $$bundles; fi
	$(LOCAL_FLASK) rejudge

serve: data
	$(LOCAL_FLASK) run --host $(HOST) --port $(PORT)

worker: install $(SECRET_FILE)
	$(LOCAL_FLASK) db upgrade
	$(LOCAL_FLASK) worker $(WORKER_ARGS)

browser-deps:
	@test -x /usr/bin/chromium || (apt-get update -q && apt-get install -y -q chromium)

test: install browser-deps
	$(BIN)/python -m pytest -q $(PYTEST_ARGS)
