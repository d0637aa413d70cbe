# syntax=docker/dockerfile:1
# MinIO built from the same pinned Go module version as `make minio` on the local workbench
# (MinIO no longer publishes community images for new releases; building keeps the stack and the
# local tests on one server version). Build context: the repository root. Base images: arguments
# (defaults upstream); `make test-compose` passes local stand-ins (docs/docker.md).
ARG GOLANG_BASE=golang:1.26.8-bookworm
ARG DEBIAN_BASE=debian:12.12-slim
FROM ${GOLANG_BASE} AS build
ARG MINIO_VERSION=v0.0.0-20260212201848-7aac2a2c5b7c
RUN CGO_ENABLED=0 GOBIN=/out go install -trimpath github.com/minio/minio@${MINIO_VERSION}

FROM ${DEBIAN_BASE}
# curl: the compose healthcheck (GET /minio/health/live).
RUN apt-get update \
 && apt-get install -y --no-install-recommends curl ca-certificates \
 && rm -rf /var/lib/apt/lists/* \
 && useradd --system --uid 10001 --home-dir /data --no-create-home minio \
 && mkdir -p /data && chown minio /data
COPY --from=build /out/minio /usr/local/bin/minio
USER minio
VOLUME ["/data"]
EXPOSE 9000 9001
ENTRYPOINT ["/usr/local/bin/minio"]
CMD ["server", "/data", "--address", ":9000", "--console-address", ":9001"]
