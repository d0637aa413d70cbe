#!/usr/bin/env bash
# The SSH workbench on this machine: every host of inventory/ssh/hosts.yml becomes a network
# namespace on its slot's bridge with its own sshd, so Ansible reaches it over SSH exactly as it
# reaches a real host (the local workbench, inventory/local, uses the local connection instead).
#
#   ssh-hosts.sh up     [--inventory FILE] GROUP...   namespaces, bridge, sshd per host; checks a login
#   ssh-hosts.sh status [--inventory FILE] GROUP...   one line per host; exit 0 when every sshd answers
#   ssh-hosts.sh down   [--inventory FILE] GROUP...   stop everything in the hosts' namespaces (sshd,
#                                                     and rpcbind/Ganesha/fstress if still running),
#                                                     delete them and the bridge once it is empty.
#                                                     Tear the slot down first (teardown.yml): its
#                                                     loop devices and cgroups are not touched here
#
# GROUP: inventory groups or hosts (e.g. sshslot1). Host variables used: wb_ssh_netns (the
# namespace), wb_addr and wb_prefix (the host's address on the bridge), wb_bridge, wb_bridge_addr
# (ADDR/PREFIX of the bridge in the root namespace: the controller's address on the slot).
#
# Keys, generated once per workbench under ${WB_STATE_DIR:-/tmp/workbench}/ssh (mode 0700, never in
# git): ssh_host_ed25519_key (the hosts' key), id_ed25519 (the controller's client key, the
# inventory's ansible_ssh_private_key_file), authorized_keys, known_hosts (the workbench's own, filled
# with StrictHostKeyChecking=accept-new; never the user's), and per host HOST/sshd_config,
# HOST/sshd.pid, HOST/sshd.log (the logins). Needs root and openssh-server (scripts/install-system.sh ssh).
case ${1-} in -h|--help) sed -n '2,/^[^#]/s/^# \{0,1\}//p' "$0"; exit 0 ;; esac   # the header above
set -euo pipefail

REPO="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
NETNS_SH=$REPO/roles/netns/files/wb-netns.sh
SSHD=/usr/sbin/sshd             # sshd re-executes itself: it must be started by its absolute path
ssh_dir=${WB_STATE_DIR:-/tmp/workbench}/ssh
# shellcheck source=private-dir.sh
source "$REPO/scripts/private-dir.sh"
inventory=$REPO/inventory/ssh/hosts.yml

die() { echo "ssh-hosts: $*" >&2; exit 1; }

[ $# -ge 1 ] || die "usage: ssh-hosts.sh up|down|status [--inventory FILE] GROUP..."
action=$1; shift
groups=()
while [ $# -gt 0 ]; do
  case $1 in
    --inventory|-i) [ $# -ge 2 ] || die "$1 needs a file"; inventory=$2; shift 2 ;;
    -*) die "unknown option '$1'" ;;
    *) groups+=("$1"); shift ;;
  esac
done
[ ${#groups[@]} -ge 1 ] || die "name at least one inventory group, e.g. sshslot1"
[ -f "$inventory" ] || die "inventory $inventory not found"
[ "$(id -u)" -eq 0 ] || die "needs root (network namespaces, bridges, sshd)"

# "HOST NS ADDR PREFIX BRIDGE BRIDGE_ADDR" per host of the groups, from ansible-inventory (which
# merges group and host variables as Ansible does).
host_lines() {
  local inv_bin=$REPO/.venv/bin/ansible-inventory inv_json
  [ -x "$inv_bin" ] || inv_bin=$(command -v ansible-inventory) || die "ansible-inventory not found (make venv)"
  inv_json=$(ANSIBLE_CONFIG=$REPO/ansible.cfg "$inv_bin" -i "$inventory" --list 2>/dev/null) ||
    die "ansible-inventory cannot read $inventory"
  python3 -c '
import json, re, sys
inv, wanted = json.load(sys.stdin), sys.argv[1:]
hostvars = inv.get("_meta", {}).get("hostvars", {})
def hosts(name, seen=()):
    if name in hostvars and name not in inv:
        return [name]
    if name not in inv or name in seen:
        return None
    found = list(inv[name].get("hosts", []))
    for child in inv[name].get("children", []):
        found += hosts(child, seen + (name,)) or []
    return found
out = []
for g in wanted:
    hs = hosts(g)
    if hs is None:
        sys.exit(f"ssh-hosts: {g} is neither a group nor a host of the inventory")
    out += [h for h in hs if h not in out]
for h in out:
    v = hostvars.get(h, {})
    row = [h] + [str(v.get(k, "")) for k in ("wb_ssh_netns", "wb_addr", "wb_prefix", "wb_bridge", "wb_bridge_addr")]
    if row[3] == "":
        row[3] = "24"
    missing = " ".join(k for k, x in zip(("wb_ssh_netns", "wb_addr", "", "wb_bridge"), row[1:5]) if k and not x)
    if missing:
        sys.exit(f"ssh-hosts: host {h} lacks {missing} in the inventory")
    if not re.fullmatch(r"wb-[a-z0-9-]{1,40}", row[1]) or not re.fullmatch(r"[0-9.]+", row[2]) \
            or not row[3].isdigit() or not re.fullmatch(r"[a-z0-9-]{1,15}", row[4]) \
            or not re.fullmatch(r"([0-9.]+/[0-9]+)?", row[5]):
        sys.exit(f"ssh-hosts: host {h}: bad wb_ssh_netns/wb_addr/wb_prefix/wb_bridge/wb_bridge_addr {row[1:]}")
    print(" ".join(row[:5] + [row[5] or "-"]))
' "${groups[@]}" <<<"$inv_json"
}

hosts_of_groups() { # host_lines, failing when there are none
  local out
  out=$(host_lines) || exit 1
  [ -n "$out" ] || die "no hosts in ${groups[*]} ($inventory)"
  echo "$out"
}

ensure_keys() {
  if ! command -v ssh-keygen >/dev/null || [ ! -x "$SSHD" ]; then
    die "openssh-server is not installed (scripts/install-system.sh ssh, or make test, installs it)"
  fi
  private_dir "${WB_STATE_DIR:-/tmp/workbench}"
  private_dir "$ssh_dir"
  [ -s "$ssh_dir/ssh_host_ed25519_key" ] ||
    ssh-keygen -q -t ed25519 -N '' -C "workbench ssh host" -f "$ssh_dir/ssh_host_ed25519_key"
  [ -s "$ssh_dir/id_ed25519" ] ||
    ssh-keygen -q -t ed25519 -N '' -C "workbench controller" -f "$ssh_dir/id_ed25519"
  # shell access for Ansible, nothing forwarded
  printf 'no-agent-forwarding,no-port-forwarding,no-X11-forwarding %s\n' "$(cat "$ssh_dir/id_ed25519.pub")" \
    >"$ssh_dir/authorized_keys"
  touch "$ssh_dir/known_hosts"
}

write_config() { # HOST ADDR
  local dir=$ssh_dir/$1
  mkdir -p "$dir"
  cat >"$dir/sshd_config" <<EOF
# Written by scripts/ssh-hosts.sh for workbench host $1; the distro's /etc/ssh/sshd_config is not read.
ListenAddress $2:22
AddressFamily inet
HostKey $ssh_dir/ssh_host_ed25519_key
PidFile $dir/sshd.pid
AuthorizedKeysFile $ssh_dir/authorized_keys
AllowUsers root
PermitRootLogin prohibit-password
PubkeyAuthentication yes
PasswordAuthentication no
KbdInteractiveAuthentication no
# no PAM stack (pam_loginuid and friends fail without a login system here); key login only
UsePAM no
# the key files live under /tmp, whose mode 1777 StrictModes would refuse
StrictModes no
X11Forwarding no
AllowTcpForwarding no
PrintMotd no
PrintLastLog no
LogLevel INFO
Subsystem sftp internal-sftp
EOF
}

sshd_pid() { # HOST NS: pid of the host's sshd (listener), or nothing
  local pid
  pid=$(cat "$ssh_dir/$1/sshd.pid" 2>/dev/null) || return 0
  if [[ $pid =~ ^[0-9]+$ ]] && [ "$(cat "/proc/$pid/comm" 2>/dev/null)" = sshd ] &&
      [ "$(ip netns identify "$pid" 2>/dev/null)" = "$2" ]; then
    echo "$pid"
  fi
}

listening() { # NS ADDR
  ip netns exec "$1" ss -Hltn "src $2 and sport = :22" 2>/dev/null | grep -q LISTEN
}

# sshd enters only the host's network namespace (nsenter, not `ip netns exec`, which remounts /sys
# and so hides /sys/fs/cgroup from the nfs_server role) and a mount namespace of its own with its
# own /run: rpcbind and Ganesha keep their state at fixed /run paths, as in ganeshactl's
# namespaces. A slave, not a private, mount namespace: the `ip netns del` of other namespaces
# reaches its copy of /run/netns, so it never keeps another host's namespace alive.
start_sshd() { # HOST NS ADDR
  local dir=$ssh_dir/$1 _
  write_config "$1" "$3"
  : >"$dir/sshd.log"
  rm -f "$dir/sshd.pid"
  # shellcheck disable=SC2016  # expanded by the inner sh
  nsenter --net="/run/netns/$2" unshare --mount --propagation slave sh -c '
    mount -t tmpfs -o mode=0755 wb-run /run && mkdir -m 0755 /run/sshd && exec "$1" -f "$2" -E "$3"' \
    sh "$SSHD" "$dir/sshd_config" "$dir/sshd.log" </dev/null ||
    die "$1: sshd did not start: $(tail -n 3 "$dir/sshd.log" | tr '\n' ' ')"
  for _ in $(seq 1 50); do   # 10 s
    [ -n "$(sshd_pid "$1" "$2")" ] && listening "$2" "$3" && return 0
    sleep 0.2
  done
  die "$1: sshd did not listen on $3:22 within 10 s: $(tail -n 3 "$dir/sshd.log" | tr '\n' ' ')"
}

check_login() { # HOST ADDR: one login with the inventory's options (records the host key)
  ssh -n -i "$ssh_dir/id_ed25519" -o IdentitiesOnly=yes -o BatchMode=yes -o ConnectTimeout=15 \
    -o StrictHostKeyChecking=accept-new -o UserKnownHostsFile="$ssh_dir/known_hosts" \
    -o ControlMaster=no -o ControlPath=none "root@$2" true 2>"$ssh_dir/$1/login.err" ||
    die "$1: ssh root@$2 failed: $(tail -n 2 "$ssh_dir/$1/login.err" | tr '\n' ' ')"
}

up() {
  local host ns addr prefix bridge baddr pid out
  ensure_keys
  out=$(hosts_of_groups)
  while read -r host ns addr prefix bridge baddr; do
    [ "$baddr" = - ] && baddr=
    # shellcheck disable=SC2086  # baddr: empty or one word
    "$NETNS_SH" up "$ns" "$addr/$prefix" --bridge "$bridge" $baddr >/dev/null
    pid=$(sshd_pid "$host" "$ns")
    if [ -z "$pid" ] || ! listening "$ns" "$addr"; then
      [ -z "$pid" ] || kill "$pid" 2>/dev/null || true   # ours, but not listening: start afresh
      start_sshd "$host" "$ns" "$addr"
    fi
    check_login "$host" "$addr"
    echo "$host: up, sshd pid $(sshd_pid "$host" "$ns") on $addr:22 (namespace $ns, bridge $bridge)"
  done <<<"$out"
}

status() {
  local host ns addr prefix bridge baddr pid out down=0 total=0
  out=$(hosts_of_groups)
  while read -r host ns addr prefix bridge baddr; do
    total=$((total + 1))
    pid=$(sshd_pid "$host" "$ns")
    if [ -n "$pid" ] && listening "$ns" "$addr"; then
      echo "$host: up, sshd pid $pid on $addr:22 (namespace $ns, bridge $bridge)"
    else
      echo "$host: down"
      down=$((down + 1))
    fi
  done <<<"$out"
  [ "$down" = 0 ] || die "$down of $total hosts down"
}

down() {
  local host ns addr prefix bridge baddr out bridges=()
  out=$(hosts_of_groups)
  while read -r host ns addr prefix bridge baddr; do
    "$NETNS_SH" down "$ns" >/dev/null
    rm -f "$ssh_dir/$host/sshd.pid"
    [[ " ${bridges[*]} " == *" $bridge "* ]] || bridges+=("$bridge")
    echo "$host: down"
  done <<<"$out"
  "$NETNS_SH" bridge-down "${bridges[@]}" >/dev/null
}

case $action in
  up) up ;;
  status) status ;;
  down) down ;;
  *) die "unknown action '$action' (up|status|down)" ;;
esac
