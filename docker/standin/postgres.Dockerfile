# Stand-in for postgres:16.10-bookworm (make test-compose): Debian bookworm's PostgreSQL 15 with an
# entrypoint that honours POSTGRES_USER / POSTGRES_PASSWORD / POSTGRES_DB and PGDATA like upstream's.
# Build context: the repository root.
ARG DEBIAN_BASE=localhost/wb-debian:bookworm
FROM ${DEBIAN_BASE}
# No cluster at install time (the entrypoint makes one in PGDATA), no service start in the build.
RUN mkdir -p /etc/postgresql-common \
 && echo 'create_main_cluster = false' > /etc/postgresql-common/createcluster.conf \
 && printf '#!/bin/sh\nexit 101\n' > /usr/sbin/policy-rc.d && chmod 0755 /usr/sbin/policy-rc.d \
 && apt-get update \
 && apt-get install -y --no-install-recommends postgresql-15 \
 && rm -rf /var/lib/apt/lists/* /usr/sbin/policy-rc.d \
 && mkdir -p /var/lib/postgresql/data /var/run/postgresql \
 && chown -R postgres:postgres /var/lib/postgresql /var/run/postgresql
COPY --chmod=0755 docker/standin/postgres-entrypoint.sh /usr/local/bin/docker-entrypoint.sh
ENV PATH=/usr/lib/postgresql/15/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
    PGDATA=/var/lib/postgresql/data
VOLUME ["/var/lib/postgresql/data"]
EXPOSE 5432
STOPSIGNAL SIGINT
ENTRYPOINT ["/usr/local/bin/docker-entrypoint.sh"]
CMD ["postgres"]
