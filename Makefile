# The two set-up commands of the README are `make run` (main job) and `make test` (tests).
# Both install what they need (Debian packages, the venv, Go builds), one line a step (scripts/setup-step.sh).
SHELL := /bin/bash
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
GO ?= go

.PHONY: setup setup-run setup-test system system-test system-celery venv venv-test fstress minio compose test test-go \
        test-py test-compose test-acceptance run ui celery bench-loadgen bench-overhead bench-search clean lock

MINIO_VERSION := v0.0.0-20260212201848-7aac2a2c5b7c
# Each set-up step prints one line; its output goes to .setup-logs/<step>.log (the tail on failure).
STEP := scripts/setup-step.sh

# `make run` needs only the main job's parts; `make test` adds what the tests use (Chromium for the UI
# test, sshd, Postgres and Redis, the Compose CLI). `make ui` and `make celery` add their own.
setup: setup-run
setup-run: system venv fstress minio
setup-test: setup-run system-test venv-test compose

system:
	@$(STEP) apt-run "Debian packages for make run" scripts/install-system.sh run
system-test:
	@$(STEP) apt-test "Debian packages for the tests" scripts/install-system.sh test
system-celery:
	@$(STEP) apt-celery "Debian packages: Postgres, Redis, Prometheus" scripts/install-system.sh celery

# The venv: the main job's packages (requirements.lock); the tests add theirs (requirements-test.lock:
# pytest, selenium, ansible-lint, ...), `make test` only. Installed by uv (pinned; pip installs it into
# the venv first): 13 s against pip's 58-83 s here. Byte-compiled at install (--compile-bytecode: with
# PYTHONDONTWRITEBYTECODE=1, as on this machine, every process would compile every module it imports).
UV_VERSION := 0.13.8
UV := $(VENV)/bin/uv pip install --python $(PY) --compile-bytecode --quiet
venv: $(VENV)/.installed
$(VENV)/.installed: requirements.lock pyproject.toml
	@$(STEP) venv "Python venv from requirements.lock" bash -c 'set -e; test -x $(PY) || $(PYTHON) -m venv $(VENV); \
	  $(PY) -m pip install --disable-pip-version-check --quiet uv==$(UV_VERSION); \
	  $(UV) -r requirements.lock; $(UV) --no-deps -e .'
	@touch $@

venv-test: $(VENV)/.installed-test
$(VENV)/.installed-test: $(VENV)/.installed requirements-test.lock
	@$(STEP) venv-test "Python packages for the tests" $(UV) -r requirements-test.lock -c requirements.lock
	@touch $@

fstress: bin/fstress
bin/fstress: $(shell find loadgen -name '*.go' -o -name 'go.mod' -o -name 'go.sum' -o -path '*/canned/*' 2>/dev/null)
	@$(STEP) fstress "fstress (Go build)" bash -c 'cd loadgen && CGO_ENABLED=0 $(GO) build -trimpath -o ../bin/fstress ./cmd/fstress'

# MinIO (the results store), built from a pinned module version (~2 min the first time). Without the
# compiler's optimisations: the build takes 0.66x the time (74 s against 113 s here), and a rating's
# few hundred small objects do not notice (300 puts and gets of 20 kB: 1.1-1.3x; docs/performance.md).
minio: bin/minio
bin/minio:
	@$(STEP) minio "MinIO (Go build, ~2 min the first time)" env GOBIN=$(CURDIR)/bin $(GO) install \
	  -gcflags='all=-N -l' -ldflags='-s -w' github.com/minio/minio@$(MINIO_VERSION)

# Compose CLI for `docker compose config` in the tests (no engine needed). Built inside the module's
# own directory: `go install .../cmd@version` rejects go.mod files with exclude directives.
# (Changing COMPOSE_VERSION: delete bin/docker-compose first.)
COMPOSE_VERSION := v5.5.1
COMPOSE_MOD := github.com/docker/compose/v5
compose: bin/docker-compose
bin/docker-compose:
	@mkdir -p bin
	@$(STEP) compose "Compose CLI (Go build, for the tests)" bash -c 'set -e; $(GO) mod download $(COMPOSE_MOD)@$(COMPOSE_VERSION); \
	  cd "$$($(GO) env GOMODCACHE)/$(COMPOSE_MOD)@$(COMPOSE_VERSION)" && CGO_ENABLED=0 $(GO) build -trimpath \
	  -ldflags "-w -X $(COMPOSE_MOD)/internal.Version=$(COMPOSE_VERSION)" -o "$(CURDIR)/bin/docker-compose" ./cmd'

test: setup-test test-go test-py

test-go:
	# -p 1: packages with timing tests must not compete for the 2 cores
	cd loadgen && $(GO) vet ./... && $(GO) test -count=1 -p 1 ./...

# Three xdist workers: the integration tests mostly wait on trials. Tests that share a slot (or a
# module-wide server) carry xdist_group(<slot>) and so run on one worker, in order (--dist loadgroup);
# collection order (integration tests first: tests/conftest.py; no reorder by group size) starts the
# slot groups and the long single tests first, the unit tests fill the tails.
test-py:
	$(PY) -m pytest -q -ra --durations=15 -n 3 --dist loadgroup --no-loadscope-reorder -m "not acceptance"

# Acceptance checks too long for the suite's budget (real Ganesha through Airflow; ~17 min): the
# nightly lab-change night of issue 31. As root.
test-acceptance: setup-test
	$(PY) -m pytest -q -ra -s -m acceptance tests/dags

# docker-compose.yml for real: images built on Podman with local stand-ins for the upstream base
# images, the stack up, rate_peak (smoke profile) through the REST API, a converged result in
# MinIO, teardown (scripts/test-compose.sh; as root; ~10 min warm, ~25 min cold). Not part of
# `make test` (docs/docker.md).
test-compose: setup-run compose
	scripts/test-compose.sh

# Main job: the rate_peak DAG, Airflow in-process, on the local default (web_server on slot1's
# Ganesha, quick profile): provision -> deploy -> decide_k/trial_k -> GX -> report -> MinIO ->
# teardown; prints lambda* with bracket and CI, the S3 location and the report path.
# Its set-up steps run side by side (make -j): the MinIO build overlaps the venv and apt.
run:
	@SETUP_PARALLEL=1 $(MAKE) --no-print-directory -j4 setup-run
	@scripts/main-job.sh

# The Airflow UI (standalone) with MinIO and the local workbench, for interactive use.
ui: setup-run
	@scripts/ui.sh

# The distributed stack: Postgres, Redis, Airflow with the CeleryExecutor and two Celery workers as
# separate processes, a supervisor restarting a dead one, UI on http://127.0.0.1:8090, and Prometheus
# with the live view of a running rating on http://127.0.0.1:9090/consoles/workbench.html?slot=slot1
# (docs/guide-distributed.md).
# Stop it with `scripts/celery-stack.sh down` (`--purge` also deletes its database).
celery: setup-run system-celery
	@scripts/celery-stack.sh up

bench-overhead: setup-run
	$(PY) bench/overhead.py --slot slot2 --trials 10

bench-loadgen: setup-run
	$(PY) bench/loadgen.py --duration 5

bench-search: venv
	$(PY) bench/search_cost.py

# Regenerate requirements.lock (the package's dependencies) and requirements-test.lock (what the
# `test` extra adds) from the pins in pyproject.toml (needs the package index).
lock:
	rm -rf /tmp/wb-lock-venv && $(PYTHON) -m venv /tmp/wb-lock-venv
	/tmp/wb-lock-venv/bin/pip install -q -e .
	/tmp/wb-lock-venv/bin/pip freeze --exclude-editable | sort > requirements.lock
	/tmp/wb-lock-venv/bin/pip install -q -e '.[test]'
	/tmp/wb-lock-venv/bin/pip freeze --exclude-editable | sort | comm -13 requirements.lock - > requirements-test.lock

clean:
	rm -rf bin $(VENV) bench/out .airflow .setup-logs
