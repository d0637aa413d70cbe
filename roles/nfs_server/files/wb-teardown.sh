#!/bin/sh
# Remove everything the nfs_server role made on this host; tolerant of partial state.
#   wb-teardown.sh STATE_DIR EXPORT_DIR NETNS HOST PURGE(true|false)
# Stops Ganesha by its pid file, its message bus by pid and its rpcbind by pid (rpcbind.pid without a namespace, else with
# the other processes in the server's namespace), unmounts the export, detaches the loop devices
# backed by files under STATE_DIR, removes the server's cgroups and (PURGE) the state directory.
# Prints CHANGED when anything was removed.
set -u
[ $# -eq 5 ] || { echo "usage: wb-teardown.sh STATE_DIR EXPORT_DIR NETNS HOST PURGE" >&2; exit 2; }
state=$1 export_dir=$2 ns=$3 host=$4 purge=$5
changed=0
fail=0

wait_gone() { # PID...: up to 10 s, then SIGKILL
  i=0
  while [ $i -lt 100 ]; do
    alive=""
    for p in "$@"; do [ -d "/proc/$p" ] && alive="$alive $p"; done
    [ -z "$alive" ] && return 0
    sleep 0.1; i=$((i + 1))
  done
  # shellcheck disable=SC2086
  kill -9 $alive 2>/dev/null || true
  sleep 0.2
}

stop_pidfile() { # PIDFILE COMM: stop the process of PIDFILE if it still is COMM
  pid=$(cat "$1" 2>/dev/null || true)
  if [ -n "$pid" ] && [ "$(cat "/proc/$pid/comm" 2>/dev/null)" = "$2" ]; then
    kill "$pid" 2>/dev/null || true
    wait_gone "$pid"
    changed=1
  fi
}

stop_pidfile "$state/ganesha.pid" ganesha.nfsd
# without a namespace: the rpcbind ganeshactl started when the host had none (none otherwise)
stop_pidfile "$state/rpcbind.pid" rpcbind
# the server's own message bus (ganeshactl start_bus) and its socket
stop_pidfile "$state/dbus.pid" dbus-daemon
bus=$(cat "$state/dbus.address" 2>/dev/null || true)
case $bus in unix:path=/*) rm -f "${bus#unix:path=}" ;; esac
if [ -n "$ns" ] && ip netns list | awk '{print $1}' | grep -qx "$ns"; then
  pids=$(ip netns pids "$ns" 2>/dev/null || true)
  if [ -n "$pids" ]; then
    # shellcheck disable=SC2086
    kill $pids 2>/dev/null || true
    # shellcheck disable=SC2086
    wait_gone $pids
    changed=1
  fi
fi

i=0
while findmnt -n --mountpoint "$export_dir" >/dev/null 2>&1 && [ $i -lt 10 ]; do
  umount "$export_dir" 2>/dev/null || { sleep 0.3; [ $i -ge 8 ] && umount -l "$export_dir"; }
  changed=1; i=$((i + 1))
done
findmnt -n --mountpoint "$export_dir" >/dev/null 2>&1 && { echo "cannot unmount $export_dir" >&2; fail=1; }

for dev in $(losetup -n -l -O NAME,BACK-FILE | awk -v p="$state/" 'index($2, p) == 1 {print $1}'); do
  command -v btrfs >/dev/null && btrfs device scan --forget "$dev" >/dev/null 2>&1
  losetup -d "$dev" && changed=1 || { echo "cannot detach $dev" >&2; fail=1; }
done

# the cgroups (v1 or v2) by the helper the role installed in STATE_DIR
if [ -x "$state/wb-cgroup.sh" ]; then
  out=$("$state/wb-cgroup.sh" remove "$host") || fail=1
  [ "$out" = CHANGED ] && changed=1
fi

if [ "$purge" = true ] && [ -e "$state" ] && [ "$fail" = 0 ]; then
  rm -rf "$state"; changed=1
fi
[ "$changed" = 1 ] && echo CHANGED
exit $fail
