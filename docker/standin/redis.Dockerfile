# Stand-in for redis:7.4.5-bookworm (make test-compose): Debian bookworm's redis-server 7.0,
# run like upstream's image without a config file (all interfaces, protected mode off, /data).
ARG DEBIAN_BASE=localhost/wb-debian:bookworm
FROM ${DEBIAN_BASE}
RUN printf '#!/bin/sh\nexit 101\n' > /usr/sbin/policy-rc.d && chmod 0755 /usr/sbin/policy-rc.d \
 && apt-get update \
 && apt-get install -y --no-install-recommends redis-server \
 && rm -rf /var/lib/apt/lists/* /usr/sbin/policy-rc.d \
 && mkdir -p /data && chown redis:redis /data
WORKDIR /data
USER redis
EXPOSE 6379
CMD ["redis-server", "--bind", "0.0.0.0", "--protected-mode", "no", "--dir", "/data"]
