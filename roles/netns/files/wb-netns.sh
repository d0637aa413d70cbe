#!/bin/sh
# Network namespaces of the local workbench (used by the netns role; tolerant and idempotent).
#   wb-netns.sh up NS ADDR [PEER_NS PEER_ADDR]  ensure NS (lo up); with a peer: ensure PEER_NS and a
#                                               veth pair wb0<->wb0 between them, ADDR/30 on NS's end
#                                               and PEER_ADDR/30 on the peer's end. Prints CHANGED
#                                               when anything was created.
#   wb-netns.sh down NS...                      kill the processes in each NS (TERM, then KILL after
#                                               5 s), delete it (its veth end goes with it).
set -eu
changed=0
dev=wb0

has_ns() { ip netns list | awk '{print $1}' | grep -qx "$1"; }

ensure_ns() {
  has_ns "$1" || { ip netns add "$1"; changed=1; }
  ip -n "$1" -o link show lo | grep -q '[<,]UP[,>]' || { ip -n "$1" link set lo up; changed=1; }
}

ensure_end() { # NS ADDR
  ip -n "$1" -o addr show dev "$dev" | grep -q "inet $2/30 " || { ip -n "$1" addr add "$2/30" dev "$dev"; changed=1; }
  ip -n "$1" -o link show "$dev" | grep -q '[<,]UP[,>]' || { ip -n "$1" link set "$dev" up; changed=1; }
}

case ${1:-} in
  up)
    [ $# -eq 3 ] || [ $# -eq 5 ] || { echo "usage: wb-netns.sh up NS ADDR [PEER_NS PEER_ADDR]" >&2; exit 2; }
    ns=$2 addr=$3
    ensure_ns "$ns"
    if [ $# -eq 5 ]; then
      peer=$4 peer_addr=$5
      ensure_ns "$peer"
      if ! ip -n "$ns" link show "$dev" >/dev/null 2>&1; then
        # A stale end in the peer (its partner's namespace was deleted) cannot be reused.
        ip -n "$peer" link del "$dev" 2>/dev/null || true
        ip link add "$dev" netns "$ns" type veth peer name "$dev" netns "$peer"
        changed=1
      fi
      ensure_end "$ns" "$addr"
      ensure_end "$peer" "$peer_addr"
    fi
    [ "$changed" = 1 ] && echo CHANGED
    exit 0
    ;;
  down)
    shift
    for ns in "$@"; do
      has_ns "$ns" || continue
      pids=$(ip netns pids "$ns" 2>/dev/null || true)
      if [ -n "$pids" ]; then
        # shellcheck disable=SC2086
        kill $pids 2>/dev/null || true
        i=0
        while [ $i -lt 50 ] && [ -n "$(ip netns pids "$ns" 2>/dev/null)" ]; do sleep 0.1; i=$((i + 1)); done
        pids=$(ip netns pids "$ns" 2>/dev/null || true)
        # shellcheck disable=SC2086
        [ -z "$pids" ] || kill -9 $pids 2>/dev/null || true
      fi
      ip netns del "$ns"
      changed=1
    done
    [ "$changed" = 1 ] && echo CHANGED
    exit 0
    ;;
  *) echo "usage: wb-netns.sh up|down ..." >&2; exit 2 ;;
esac
