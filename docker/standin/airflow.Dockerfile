# Stand-in for apache/airflow:3.3.2-python3.11 (make test-compose): Debian's Python 3.11, a venv
# owned by the `airflow` user (uid 50000, group 0) at /home/airflow/.local (upstream pip-installs
# there too), Airflow 3.3.2 with the celery and postgres providers the upstream image ships, and an
# entrypoint that runs `airflow <args>` unless the command is bash/python/sh or a path.
# Build context: the repository root (for requirements.lock, the constraints).
ARG DEBIAN_BASE=localhost/wb-debian:bookworm
FROM ${DEBIAN_BASE}
RUN apt-get update \
 && apt-get install -y --no-install-recommends python3 python3-venv ca-certificates curl dumb-init \
      libpq5 procps \
 && rm -rf /var/lib/apt/lists/* \
 && useradd --uid 50000 --gid 0 --home-dir /home/airflow --create-home --shell /bin/bash airflow \
 && mkdir -p /opt/airflow \
 && chown airflow:0 /opt/airflow /home/airflow \
 && chmod 0775 /opt/airflow /home/airflow
COPY --chmod=0755 docker/standin/airflow-entrypoint.sh /entrypoint
COPY docker/standin/airflow-image.txt requirements.lock /tmp/standin/
ENV AIRFLOW_HOME=/opt/airflow AIRFLOW_USER_HOME_DIR=/home/airflow DUMB_INIT_SETSID=1 \
    PATH=/home/airflow/.local/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
    PIP_DISABLE_PIP_VERSION_CHECK=1 PYTHONUNBUFFERED=1
USER airflow
RUN python3 -m venv /home/airflow/.local \
 && pip install --no-cache-dir -c /tmp/standin/requirements.lock -r /tmp/standin/airflow-image.txt \
 && airflow version
WORKDIR /opt/airflow
EXPOSE 8080
ENTRYPOINT ["/usr/bin/dumb-init", "--", "/entrypoint"]
CMD ["--help"]
