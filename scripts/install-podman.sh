#!/usr/bin/env bash
# System packages of `make test-compose` (scripts/test-compose.sh): Podman with runc (crun refuses
# this machine's hybrid cgroups), CNI bridge networking with the dnsname plugin (service names
# resolve on the compose network), debootstrap for the local stand-in base
# images, curl. Idempotent: does nothing when everything is installed.
case ${1-} in -h|--help) sed -n '2,/^[^#]/s/^# \{0,1\}//p' "$0"; exit 0 ;; esac   # the header above
set -euo pipefail
packages=(podman runc containernetworking-plugins golang-github-containernetworking-plugin-dnsname iptables conmon
          debootstrap curl ca-certificates)
exec "$(dirname "$0")/install-system.sh" "${packages[@]}"
