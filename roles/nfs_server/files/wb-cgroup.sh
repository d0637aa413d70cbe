#!/bin/sh
# The cgroups of one workbench server, cgroup v1 or v2, whichever the host has (used by the
# nfs_server role, which installs this file as STATE_DIR/wb-cgroup.sh; idempotent).
#   wb-cgroup.sh apply HOST MEM_BYTES READ_IOPS WRITE_IOPS READ_BPS WRITE_BPS [DEV...]
#       memory limit MEM_BYTES (0 = unlimited) and per-DEV I/O throttles (0 = no rule).
#       v1: memory/workbench/HOST memory.limit_in_bytes, blkio/workbench/HOST blkio.throttle.*
#       v2: workbench/HOST memory.max, io.max ("MAJ:MIN riops=.. wiops=.. rbps=.. wbps=..")
#       Prints CHANGED when something was written.
#   wb-cgroup.sh drop HOST     reclaim the page cache charged to the server's memory cgroup
#   wb-cgroup.sh procs HOST    the cgroup.procs file(s) the server process joins, one per line
#   wb-cgroup.sh remove HOST   remove the server's cgroups (after its processes left); CHANGED
# v2 when $WB_CGROUP_ROOT (default /sys/fs/cgroup) holds cgroup.controllers, else v1 (hybrid
# hosts: the v1 controllers under it). DEV is a block device or a MAJ:MIN pair.
set -eu
[ $# -ge 2 ] || { echo "usage: wb-cgroup.sh apply|drop|procs|remove HOST ..." >&2; exit 2; }
action=$1 host=$2
root=${WB_CGROUP_ROOT:-/sys/fs/cgroup}
changed=0
if [ -f "$root/cgroup.controllers" ]; then
  v=2 mem=$root/workbench/$host blk=$mem
else
  v=1 mem=$root/memory/workbench/$host blk=$root/blkio/workbench/$host
fi

need() { # CONTROLLER FACTOR: fail naming the factor when the host lacks the controller
  if [ $v = 2 ]; then
    grep -qw "$1" "$root/cgroup.controllers" && return 0
    echo "$2 needs the cgroup v2 '$1' controller, which $root/cgroup.controllers does not list" >&2
  else
    [ -d "$root/$1" ] && return 0
    echo "$2 needs the cgroup v1 '$1' controller, not mounted at $root/$1" >&2
  fi
  exit 3
}

enable_v2() { # let workbench/ and its children use the memory and io controllers
  for d in "$root" "$root/workbench"; do
    [ -d "$d" ] || { mkdir "$d"; changed=1; }
    f=$d/cgroup.subtree_control
    { grep -qw memory "$f" && grep -qw io "$f"; } 2>/dev/null || { echo "+memory +io" >"$f"; changed=1; }
  done
}

majmin() { case $1 in *:*) echo "$1" ;; *) lsblk -dno MAJ:MIN "$1" | tr -d ' ' ;; esac; }

set_file() { # FILE VALUE: write when it differs
  [ "$(cat "$1" 2>/dev/null || true)" = "$2" ] || { echo "$2" >"$1"; changed=1; }
}

apply_v1() { # BYTES RIOPS WIOPS RBPS WBPS DEV...
  cur=$(cat "$mem/memory.limit_in_bytes")
  # "unlimited" reads back as the largest page-aligned value (9223372036854771712 with 4 KiB pages)
  if [ "$1" = 0 ]; then [ ${#cur} -ge 19 ] || { echo -1 >"$mem/memory.limit_in_bytes"; changed=1; }
  else set_file "$mem/memory.limit_in_bytes" "$1"; fi
  riops=$2 wiops=$3 rbps=$4 wbps=$5; shift 5
  for dev in "$@"; do
    mm=$(majmin "$dev")
    for pair in "read_iops_device:$riops" "write_iops_device:$wiops" "read_bps_device:$rbps" "write_bps_device:$wbps"; do
      f=$blk/blkio.throttle.${pair%%:*} want=${pair#*:}
      have=$(awk -v k="$mm" '$1 == k {print $2}' "$f")
      if [ "$want" = 0 ]; then [ -z "$have" ] || { echo "$mm 0" >"$f"; changed=1; }
      elif [ "$have" != "$want" ]; then echo "$mm $want" >"$f"; changed=1; fi
    done
  done
}

apply_v2() { # BYTES RIOPS WIOPS RBPS WBPS DEV...
  if [ "$1" = 0 ]; then set_file "$mem/memory.max" max; else set_file "$mem/memory.max" "$1"; fi
  lim() { [ "$1" = 0 ] && echo max || echo "$1"; }
  riops=$(lim "$2") wiops=$(lim "$3") rbps=$(lim "$4") wbps=$(lim "$5"); shift 5
  for dev in "$@"; do
    mm=$(majmin "$dev")
    want="$mm rbps=$rbps wbps=$wbps riops=$riops wiops=$wiops"
    have=$(awk -v k="$mm" '$1 == k' "$blk/io.max" 2>/dev/null || true)
    # io.max lists only devices with a limit; all "max" reads back as no line at all
    case $want in *"rbps=max wbps=max riops=max wiops=max") [ -z "$have" ] && continue ;; esac
    [ "$have" = "$want" ] || { echo "$want" >"$blk/io.max"; changed=1; }
  done
}

case $action in
  apply)
    [ $# -ge 7 ] || { echo "usage: wb-cgroup.sh apply HOST MEM RIOPS WIOPS RBPS WBPS [DEV...]" >&2; exit 2; }
    shift 2
    [ "$1" = 0 ] || need memory memory_mb
    [ "$2$3$4$5" = 0000 ] || [ $# -eq 5 ] || need "$([ $v = 2 ] && echo io || echo blkio)" read_iops/write_iops/read_bps/write_bps
    [ $v = 1 ] || enable_v2
    for d in "$mem" "$blk"; do [ -d "$d" ] || { mkdir -p "$d"; changed=1; }; done
    "apply_v$v" "$@"
    ;;
  drop)
    sync
    if [ -d "$mem" ]; then
      if [ $v = 2 ]; then echo 1T >"$mem/memory.reclaim" 2>/dev/null || true
      else echo 0 >"$mem/memory.force_empty"; fi
    fi
    changed=1
    ;;
  procs)
    echo "$mem/cgroup.procs"
    [ "$blk" = "$mem" ] || echo "$blk/cgroup.procs"
    ;;
  remove)
    for d in $mem $blk; do
      [ -d "$d" ] || continue
      i=0
      until rmdir "$d" 2>/dev/null; do
        i=$((i + 1)); [ $i -lt 50 ] || { echo "cannot remove cgroup $d" >&2; exit 1; }
        sleep 0.1
      done
      changed=1
      rmdir "${d%/*}" 2>/dev/null || true      # workbench/, once its last server is gone
    done
    ;;
  *) echo "usage: wb-cgroup.sh apply|drop|procs|remove HOST ..." >&2; exit 2 ;;
esac
[ "$changed" = 1 ] && echo CHANGED
exit 0
