# syntax=docker/dockerfile:1
# Airflow 3.3.2 + the workbench package (the DAGs import `workbench`), Ansible (from
# requirements.lock), an ssh client for the compose inventory and the fstress binary the
# fstress role copies to the load hosts (roles/fstress: fstress_bin_src = <repo>/bin/fstress).
# Build context: the repository root (docker-compose.yml sets it). Base images are arguments
# (defaults: the upstream images); `make test-compose` builds it on Podman with local stand-ins
# made from Debian's packages (docker/standin/, docs/docker.md).
ARG GOLANG_BASE=golang:1.26.8-bookworm
ARG AIRFLOW_BASE=apache/airflow:3.3.2-python3.11

# --- fstress, built exactly as `make fstress` does ----------------------------------------
FROM ${GOLANG_BASE} AS fstress
WORKDIR /src/loadgen
COPY loadgen/go.mod loadgen/go.sum ./
RUN go mod download
COPY loadgen/ ./
RUN CGO_ENABLED=0 go build -trimpath -o /out/fstress ./cmd/fstress

# --- Airflow with the project installed ------------------------------------------------------
FROM ${AIRFLOW_BASE}
USER root
# openssh-client: Ansible's ssh connection to the ganesha and loadgen containers.
RUN apt-get update \
 && apt-get install -y --no-install-recommends openssh-client iproute2 \
 && rm -rf /var/lib/apt/lists/* \
 && mkdir -p /opt/workbench /opt/workbench-ssh /opt/airflow/auth \
 && chown airflow:0 /opt/workbench /opt/workbench-ssh /opt/airflow/auth \
 && chmod 0770 /opt/workbench-ssh /opt/airflow/auth
USER airflow
# The pinned dependency set first (its own layer: changes rarely). Naming apache-airflow keeps
# pip from replacing the image's Airflow; the image's providers (celery, postgres) stay.
COPY --chown=airflow:0 requirements.lock /opt/workbench/requirements.lock
RUN pip install --no-cache-dir "apache-airflow==3.3.2" -r /opt/workbench/requirements.lock
# The repository (docker/airflow.Dockerfile.dockerignore drops venvs, binaries, results, tests),
# installed editable so that workbench.config.paths.REPO is /opt/workbench (playbooks, roles,
# inventory, bin/fstress) and bind-mounted src/ take effect without a rebuild.
COPY --chown=airflow:0 . /opt/workbench/
COPY --chown=airflow:0 --from=fstress /out/fstress /opt/workbench/bin/fstress
RUN pip install --no-cache-dir --no-deps -e /opt/workbench \
 && python -c "import workbench.measure.ansible, workbench.findings, analysis.report, airflow.providers.celery, psycopg2" \
 && chmod -R g+w /opt/workbench
