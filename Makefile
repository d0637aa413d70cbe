# The two set-up commands of the README are `make run` (main job) and `make test` (tests).
# Both install what they need: Debian packages, the Python venv from requirements.lock, fstress.
SHELL := /bin/bash
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
GO ?= go

.PHONY: setup system venv fstress test test-go test-py run bench-loadgen bench-overhead bench-search clean lock

setup: system venv fstress

system:
	scripts/install-system.sh

venv: $(VENV)/.installed
$(VENV)/.installed: requirements.lock pyproject.toml
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --disable-pip-version-check -r requirements.lock
	$(PY) -m pip install -q --disable-pip-version-check --no-deps -e .
	touch $@

fstress: bin/fstress
bin/fstress: $(shell find loadgen -name '*.go' -o -name 'go.mod' -o -name 'go.sum' -o -path '*/workloads/*' 2>/dev/null)
	cd loadgen && CGO_ENABLED=0 $(GO) build -trimpath -o ../bin/fstress ./cmd/fstress

test: setup test-go test-py

test-go:
	# -p 1: packages with timing tests must not compete for the 2 cores
	cd loadgen && $(GO) vet ./... && $(GO) test -count=1 -p 1 ./...

test-py:
	$(PY) -m pytest -q -ra

# Main job: rate the local default (web_server, slot1, quick profile) end to end with Ansible:
# provision -> deploy fstress -> peak-rate search -> teardown; prints lambda* with bracket and CI.
run: setup
	$(VENV)/bin/workbench rate --workload web_server --profile quick

bench-overhead: setup
	$(PY) bench/overhead.py --slot slot2 --trials 10

bench-loadgen: setup
	$(PY) bench/loadgen.py --duration 5

bench-search: venv
	$(PY) bench/search_cost.py

# Regenerate requirements.lock from the pins in pyproject.toml (needs the package index).
lock:
	rm -rf /tmp/wb-lock-venv && $(PYTHON) -m venv /tmp/wb-lock-venv
	/tmp/wb-lock-venv/bin/pip install -q -e '.[test]'
	/tmp/wb-lock-venv/bin/pip freeze --exclude-editable | sort > requirements.lock

clean:
	rm -rf bin $(VENV) bench/out
