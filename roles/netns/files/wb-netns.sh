#!/bin/sh
# Network namespaces of the local workbench (used by the netns role and scripts/ssh-hosts.sh;
# tolerant and idempotent). Two ways to join a slot's hosts:
#   wb-netns.sh up NS ADDR [PEER_NS PEER_ADDR]  peer mode: ensure NS (lo up); with a peer: ensure
#                                               PEER_NS and a veth pair wb0<->wb0 between them,
#                                               ADDR/30 on NS's end and PEER_ADDR/30 on the peer's.
#   wb-netns.sh up NS ADDR/PREFIX --bridge BR [BR_ADDR/PREFIX]
#                                               bridge mode: ensure NS (lo up), the Linux bridge BR
#                                               in the root namespace (created if missing) and a veth
#                                               pair wb0 (in NS, ADDR/PREFIX) <-> wbv... (root
#                                               namespace, enslaved to BR); BR_ADDR/PREFIX, if given,
#                                               goes on BR itself, so the root namespace reaches NS.
#   wb-netns.sh down NS...                      kill the processes in each NS (TERM, then KILL after
#                                               5 s), delete it (its veth pair, either mode, goes with
#                                               it; its bridge port is gone when this returns).
#   wb-netns.sh bridge-down BR...               delete each bridge that has no port left (a bridge
#                                               with ports stays: other hosts still use it).
# up and down print CHANGED when they created or deleted anything, bridge-down when it deleted one.
set -eu
changed=0
dev=wb0

has_ns() { ip netns list | awk '{print $1}' | grep -qx "$1"; }
has_link() { ip link show "$1" >/dev/null 2>&1; }
is_up() { ip -o link show "$1" | grep -q '[<,]UP[,>]'; }
has_addr() { ip -o addr show dev "$1" | grep -q "inet $2 "; }

ensure_ns() {
  has_ns "$1" || { ip netns add "$1"; changed=1; }
  ip -n "$1" -o link show lo | grep -q '[<,]UP[,>]' || { ip -n "$1" link set lo up; changed=1; }
}

ensure_end() { # NS ADDR/PREFIX: the address on wb0 in NS, and wb0 up
  ip -n "$1" -o addr show dev "$dev" | grep -q "inet $2 " || { ip -n "$1" addr add "$2" dev "$dev"; changed=1; }
  ip -n "$1" -o link show "$dev" | grep -q '[<,]UP[,>]' || { ip -n "$1" link set "$dev" up; changed=1; }
}

# Root-namespace name of NS's bridge port: interface names have at most 15 characters, so long
# namespace names fall back to a checksum of the name.
port_name() {
  name="wbv${1#wb-}"
  [ ${#name} -le 15 ] || name="wbv$(printf %s "$1" | cksum | awk '{printf "%08x", $1}')"
  echo "$name"
}

# Another host of the slot may create the same bridge (or its address) at the same moment: an
# "add" that fails is fine when the thing exists afterwards.
ensure_bridge() { # BR [BR_ADDR/PREFIX]
  if ! has_link "$1"; then
    # A fixed MAC: by default a bridge takes the lowest MAC of its ports and so changes it when
    # that port goes, while the hosts' neighbour entries still name the old one. A host going
    # down then could not deliver its last packets (the FIN of its sshd's connections) for a
    # minute, and its dying namespace (socket held) kept its bridge port that long.
    mac=$(printf %s "$1" | cksum | awk '{x = $1 % 16777216; printf "02:57:42:%02x:%02x:%02x", int(x / 65536), int(x / 256) % 256, x % 256}')
    if ip link add "$1" address "$mac" type bridge 2>/dev/null; then changed=1
    elif ! has_link "$1"; then echo "wb-netns.sh: cannot create bridge $1" >&2; exit 1; fi
  fi
  is_up "$1" || { ip link set "$1" up; changed=1; }
  [ -n "${2:-}" ] || return 0
  has_addr "$1" "$2" && return 0
  if ip addr add "$2" dev "$1" 2>/dev/null; then changed=1
  elif ! has_addr "$1" "$2"; then echo "wb-netns.sh: cannot put $2 on bridge $1" >&2; exit 1; fi
}

up_peer() { # NS ADDR [PEER_NS PEER_ADDR]
  ns=$1 addr=$2
  ensure_ns "$ns"
  [ $# -eq 4 ] || return 0
  peer=$3 peer_addr=$4
  ensure_ns "$peer"
  if ! ip -n "$ns" link show "$dev" >/dev/null 2>&1; then
    # A stale end in the peer (its partner's namespace was deleted) cannot be reused.
    ip -n "$peer" link del "$dev" 2>/dev/null || true
    ip link add "$dev" netns "$ns" type veth peer name "$dev" netns "$peer"
    changed=1
  fi
  ensure_end "$ns" "$addr/30"
  ensure_end "$peer" "$peer_addr/30"
}

up_bridge() { # NS ADDR/PREFIX BR [BR_ADDR/PREFIX]
  ns=$1 cidr=$2 br=$3
  port=$(port_name "$ns")
  ensure_ns "$ns"
  ensure_bridge "$br" "${4:-}"
  # wb0 in NS must be the partner of our bridge port; a wb0 from peer mode (its partner in another
  # namespace) or a port left without its namespace is replaced.
  if ! has_link "$port" || ! ip -n "$ns" link show "$dev" >/dev/null 2>&1; then
    ip -n "$ns" link del "$dev" 2>/dev/null || true
    ip link del "$port" 2>/dev/null || true
    ip link add "$dev" netns "$ns" type veth peer name "$port"
    changed=1
  fi
  ip -o link show "$port" | grep -q " master $br " || { ip link set "$port" master "$br"; changed=1; }
  is_up "$port" || { ip link set "$port" up; changed=1; }
  ensure_end "$ns" "$cidr"
}

case ${1:-} in
  up)
    if [ $# -ge 4 ] && [ "$4" = --bridge ]; then
      [ $# -eq 5 ] || [ $# -eq 6 ] || { echo "usage: wb-netns.sh up NS ADDR/PREFIX --bridge BR [BR_ADDR/PREFIX]" >&2; exit 2; }
      case $3 in */*) ;; *) echo "wb-netns.sh: bridge mode needs ADDR/PREFIX, got '$3'" >&2; exit 2 ;; esac
      case ${6:-x/} in */*) ;; *) echo "wb-netns.sh: bridge address needs ADDR/PREFIX, got '$6'" >&2; exit 2 ;; esac
      up_bridge "$2" "$3" "$5" "${6:-}"
    else
      [ $# -eq 3 ] || [ $# -eq 5 ] || { echo "usage: wb-netns.sh up NS ADDR [PEER_NS PEER_ADDR]" >&2; exit 2; }
      shift
      up_peer "$@"
    fi
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
      # The kernel dismantles a deleted namespace asynchronously, and not at all while something
      # still holds it (a socket, or a copy of its /run/netns mount in another process's private
      # mount namespace). Wait up to 3 s for its bridge port to go, then delete the port (and so
      # the veth pair) ourselves, so that a bridge-down right after finds the bridge empty.
      port=$(port_name "$ns") i=0
      while [ $i -lt 30 ] && has_link "$port"; do sleep 0.1; i=$((i + 1)); done
      ip link del "$port" 2>/dev/null || true
    done
    ;;
  bridge-down)
    shift
    for br in "$@"; do
      has_link "$br" || continue
      ports=$(ip -o link show master "$br" 2>/dev/null || true)
      if [ -n "$ports" ]; then
        echo "wb-netns.sh: bridge $br still has ports, kept" >&2
        continue
      fi
      # another host of the slot may be deleting the same bridge at this moment: gone is gone
      if ip link del "$br" 2>/dev/null; then changed=1
      elif has_link "$br"; then echo "wb-netns.sh: cannot delete bridge $br" >&2; exit 1; fi
    done
    ;;
  *) echo "usage: wb-netns.sh up|down|bridge-down ..." >&2; exit 2 ;;
esac
[ "$changed" = 1 ] && echo CHANGED
exit 0
