# Stand-in for golang:1.26.8-bookworm (make test-compose; upstream images cannot be pulled on the
# development machine): the Debian root + this machine's Go toolchain. Build context: the Go root
# (GOROOT, go1.26.8), with golang.Dockerfile.dockerignore; scripts/test-compose.sh checks the version.
ARG DEBIAN_BASE=localhost/wb-debian:bookworm
FROM ${DEBIAN_BASE}
# ca-certificates: the Go module proxy over https; git: modules outside the proxy, as upstream.
RUN apt-get update \
 && apt-get install -y --no-install-recommends ca-certificates git \
 && rm -rf /var/lib/apt/lists/*
COPY . /usr/local/go
ENV GOLANG_VERSION=1.26.8 GOPATH=/go GOTOOLCHAIN=local
ENV PATH=/go/bin:/usr/local/go/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
RUN mkdir -p /go/bin /go/src && go version
WORKDIR /go
