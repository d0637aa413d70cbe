#!/bin/sh
# Sourced by the scripts that keep state (minio.sh, ganesha-slot.sh, ssh-hosts.sh); run with
# directories as arguments (the roles, on every host: `private-dir.sh /tmp/workbench`) it checks those.
# private_dir DIR: make DIR (and missing parents) if needed; refuse it unless it is a real directory
# owned by us; then mode 0700. Root runs scripts and reads credentials from these directories, so a
# directory another user made first (e.g. under world-writable /tmp) must never be used.
private_dir() {
  local d=$1
  [ ! -L "$d" ] || { echo "refusing state directory $d: it is a symbolic link" >&2; exit 1; }
  mkdir -p -m 0700 "$d"
  [ -d "$d" ] && [ ! -L "$d" ] || { echo "refusing state directory $d: not a directory" >&2; exit 1; }
  [ "$(stat -c %u "$d")" = "$(id -u)" ] ||
    { echo "refusing state directory $d: owned by uid $(stat -c %u "$d"), not by us ($(id -u))" >&2; exit 1; }
  chmod 0700 "$d"
}

case $0 in       # executed (not sourced by another script): check the directories given
  *private-dir.sh)
    case ${1-} in -h|--help) sed -n '2,/^[^#]/s/^# \{0,1\}//p' "$0"; exit 0 ;; esac
    for d in "$@"; do private_dir "$d"; done ;;
esac
