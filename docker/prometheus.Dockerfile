# syntax=docker/dockerfile:1
# The live view of docker-compose.yml: Debian's Prometheus and node exporter (the same packages as
# scripts/celery-stack.sh runs). Configuration, recording rules and the console page come from the
# repository's monitoring/prometheus/, mounted at /etc/prometheus/workbench (docker-compose.yml).
# Build context: the repository root. Base image: an argument (default upstream); `make test-compose`
# passes a local stand-in.
ARG DEBIAN_BASE=debian:12.12-slim
FROM ${DEBIAN_BASE}
# policy-rc.d: the packages' maintainer scripts must not start their services while building.
RUN printf '#!/bin/sh\nexit 101\n' > /usr/sbin/policy-rc.d && chmod 755 /usr/sbin/policy-rc.d \
 && apt-get update \
 && apt-get install -y --no-install-recommends prometheus prometheus-node-exporter curl \
 && rm -rf /var/lib/apt/lists/* /usr/sbin/policy-rc.d \
 && mkdir -p /prometheus
COPY --chmod=0755 docker/prometheus/entrypoint.sh /usr/local/bin/wb-prometheus-entrypoint
EXPOSE 9090
ENTRYPOINT ["/usr/local/bin/wb-prometheus-entrypoint"]
