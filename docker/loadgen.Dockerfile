# syntax=docker/dockerfile:1
# A load host: sshd + python3 so that Ansible manages it like any other host (the fstress role
# copies the controller's binary, builds the file set and runs trials over ssh), plus fstress
# itself in /usr/local/bin for manual runs (`docker compose exec loadgen fstress ...`).
# Why sshd and not just the binary: the harness drives load hosts only through Ansible
# (roles/fstress: deploy, file set, per-trial `fstress run`, fetch of the JSON), the same path
# as on real hosts; a bare binary image would need a second, compose-only harness.
# Build context: the repository root. Base images: arguments (defaults upstream); `make
# test-compose` passes local stand-ins (docs/docker.md).
ARG GOLANG_BASE=golang:1.26.8-bookworm
ARG DEBIAN_BASE=debian:12.12-slim

FROM ${GOLANG_BASE} AS build
WORKDIR /src/loadgen
COPY loadgen/go.mod loadgen/go.sum ./
RUN go mod download
COPY loadgen/ ./
RUN CGO_ENABLED=0 go build -trimpath -o /out/fstress ./cmd/fstress \
 && /out/fstress workloads >/dev/null

FROM ${DEBIAN_BASE}
# python3: Ansible modules; iproute2 (ss), util-linux (taskset), procps: the fstress role.
RUN apt-get update \
 && apt-get install -y --no-install-recommends openssh-server python3 iproute2 util-linux procps \
 && rm -rf /var/lib/apt/lists/* \
 && rm -f /etc/ssh/ssh_host_* \
 && mkdir -p /run/sshd /root/.ssh \
 && chmod 0700 /root/.ssh
COPY --from=build /out/fstress /usr/local/bin/fstress
COPY docker/ssh/sshd_config /etc/ssh/sshd_config.d/workbench.conf
COPY --chmod=0755 docker/ssh/entrypoint.sh /usr/local/bin/wb-ssh-entrypoint
EXPOSE 22
ENTRYPOINT ["/usr/local/bin/wb-ssh-entrypoint"]
CMD ["/usr/sbin/sshd", "-D", "-e"]
