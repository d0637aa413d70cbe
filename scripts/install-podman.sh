#!/usr/bin/env bash
# System packages of `make test-compose` (scripts/test-compose.sh): Podman with runc (crun refuses
# this machine's hybrid cgroups), CNI bridge networking with the dnsname plugin (service names
# resolve on the compose network), debootstrap for the local stand-in base
# images, curl. Idempotent: does nothing when everything is installed.
set -euo pipefail
packages=(podman runc containernetworking-plugins golang-github-containernetworking-plugin-dnsname iptables conmon
          debootstrap curl ca-certificates)
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
[ ${#missing[@]} -eq 0 ] && exit 0
echo "install-podman: installing ${missing[*]}" >&2
[ "$(id -u)" -eq 0 ] || { echo "install-podman: needs root to apt-get install ${missing[*]}" >&2; exit 1; }
apt-get update -qq
DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
