#!/usr/bin/env bash
# Debian packages, by what needs them. Each argument is a set or a package name:
#   run     what `make run` needs: Ganesha (the SUT), rpcbind, iproute2 (network namespaces),
#           mkfs for the file systems the nfs_server role builds on loop devices (ext4, xfs,
#           btrfs), procps/util-linux, curl (MinIO's health check)
#   ssh     openssh-server: the sshd of each SSH workbench host (scripts/ssh-hosts.sh)
#   celery  postgresql and redis-server: the distributed stack (scripts/celery-stack.sh); prometheus
#           and prometheus-node-exporter: its live view of a rating (docs/guide-distributed.md)
#   test    what `make test` adds: ssh, celery (with Prometheus: promtool in the tests), chromium and
#           chromium-driver (the Airflow UI test), zstd (what fstress's written data compresses to)
# Any other argument is a package name (scripts/install-podman.sh), installed the same way.
# Idempotent: does nothing when everything is installed. Without arguments: run.
case ${1-} in -h|--help) sed -n '2,/^[^#]/s/^# \{0,1\}//p' "$0"; exit 0 ;; esac   # the header above
set -euo pipefail
declare -A sets=(
  [run]="nfs-ganesha nfs-ganesha-vfs dbus rpcbind iproute2 util-linux procps e2fsprogs xfsprogs btrfs-progs curl"
  [ssh]="openssh-server"
  [celery]="postgresql redis-server prometheus prometheus-node-exporter"
  [test]="openssh-server postgresql redis-server prometheus prometheus-node-exporter chromium chromium-driver zstd"
)
[ $# -gt 0 ] || set -- run
packages=()
for a in "$@"; do
  if [ -n "${sets[$a]+x}" ]; then read -ra more <<<"${sets[$a]}"; packages+=("${more[@]}")
  else packages+=("$a"); fi
done
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
[ ${#missing[@]} -eq 0 ] && { echo "install-system: all installed: ${packages[*]}"; exit 0; }
echo "install-system: installing ${missing[*]}" >&2
[ "$(id -u)" -eq 0 ] || { echo "install-system: needs root to apt-get install ${missing[*]}" >&2; exit 1; }
apt-get update -qq
# The distro's own sshd (port 22 on every address) must not start: scripts/ssh-hosts.sh runs one
# sshd per workbench host on that host's address only. Debian's init script and its systemd unit
# (ConditionPathExists) both skip sshd while this file exists; set only when we install the package
# here, so a machine that already ran its sshd keeps it. Delete the file to use the distro's sshd.
if [[ " ${missing[*]} " == *" openssh-server "* ]]; then
  mkdir -p /etc/ssh
  touch /etc/ssh/sshd_not_to_be_run
fi
# Nor may the packaged Postgres, Redis, Prometheus and node exporter start (5432, 6379, 9090, 9100):
# celery-stack.sh runs its own. Debian's maintainer scripts ask /usr/sbin/policy-rc.d before
# starting a service; 101 = "not now".
policy=/usr/sbin/policy-rc.d
if [ ! -e "$policy" ]; then
  printf '#!/bin/sh\nexit 101\n' >"$policy" && chmod 755 "$policy"
  trap 'rm -f "$policy"' EXIT
fi
DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}"
# The packaged service units are not used (no systemd here); slots start their own daemons.
