# syntax=docker/dockerfile:1
# The NFS server under test: NFS-Ganesha (VFS FSAL) + rpcbind on Debian bookworm, NFSv3.
#   WB_GANESHA_MODE=ansible (default in docker-compose.yml): sshd only; the nfs_server role
#     provisions disks, file system, cgroups and starts Ganesha with its own config.
#   WB_GANESHA_MODE=static: rpcbind + Ganesha in the foreground with /etc/ganesha/ganesha.conf
#     (docker/ganesha/ganesha.conf: /export over NFSv3 and NFSv4.1, TCP, ports 2049 / 20048).
# Needs `privileged: true` (see docker-compose.yml). Build context: the repository root.
# Base image: an argument (default upstream); `make test-compose` passes a local stand-in.
ARG DEBIAN_BASE=debian:12.12-slim
FROM ${DEBIAN_BASE}
# ganesha + rpcbind: the server; openssh-server + python3: Ansible; iproute2 (ss), util-linux
# (losetup, blkid, lsblk, findmnt, taskset, unshare), mount, e2fsprogs/xfsprogs/btrfs-progs
# (mkfs.*), procps (pgrep): what roles/nfs_server checks for and runs.
RUN apt-get update \
 && apt-get install -y --no-install-recommends \
      nfs-ganesha nfs-ganesha-vfs rpcbind \
      openssh-server python3 iproute2 util-linux mount procps \
      e2fsprogs xfsprogs btrfs-progs \
 && rm -rf /var/lib/apt/lists/* \
 && rm -f /etc/ssh/ssh_host_* \
 && mkdir -p /run/sshd /root/.ssh /export /var/lib/nfs/ganesha \
 && chmod 0700 /root/.ssh
COPY docker/ganesha/ganesha.conf /etc/ganesha/ganesha.conf
COPY docker/ssh/sshd_config /etc/ssh/sshd_config.d/workbench.conf
COPY --chmod=0755 docker/ssh/entrypoint.sh /usr/local/bin/wb-ssh-entrypoint
COPY --chmod=0755 docker/ganesha/entrypoint.sh /usr/local/bin/wb-ganesha-entrypoint
COPY --chmod=0755 docker/ganesha/healthcheck.sh /usr/local/bin/wb-ganesha-health
EXPOSE 22 111 2049 20048
ENTRYPOINT ["/usr/local/bin/wb-ganesha-entrypoint"]
