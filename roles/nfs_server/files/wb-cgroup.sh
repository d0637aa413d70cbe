#!/bin/sh
# cgroup v1 limits of one workbench server (used by the nfs_server role; idempotent).
#   wb-cgroup.sh apply HOST MEM_BYTES READ_IOPS WRITE_IOPS READ_BPS WRITE_BPS [DEV...]
#       memory/workbench/HOST: memory.limit_in_bytes = MEM_BYTES (0 = unlimited);
#       blkio/workbench/HOST: blkio.throttle.{read,write}_{iops,bps}_device for each DEV's MAJ:MIN
#       (0 = no rule). Prints CHANGED when something was written.
#   wb-cgroup.sh drop HOST     reclaim the page cache charged to the server's memory cgroup
set -eu
changed=0
[ $# -ge 2 ] || { echo "usage: wb-cgroup.sh apply|drop HOST ..." >&2; exit 2; }
action=$1 host=$2
mem=/sys/fs/cgroup/memory/workbench/$host
blk=/sys/fs/cgroup/blkio/workbench/$host

case $action in
  apply)
    [ $# -ge 7 ] || { echo "usage: wb-cgroup.sh apply HOST MEM RIOPS WIOPS RBPS WBPS [DEV...]" >&2; exit 2; }
    bytes=$3; shift 2
    for d in "$mem" "$blk"; do [ -d "$d" ] || { mkdir -p "$d"; changed=1; }; done
    cur=$(cat "$mem/memory.limit_in_bytes")
    if [ "$bytes" = 0 ]; then
      # "unlimited" reads back as the largest page-aligned value (9223372036854771712 with 4 KiB pages)
      [ ${#cur} -ge 19 ] || { echo -1 >"$mem/memory.limit_in_bytes"; changed=1; }
    elif [ "$cur" != "$bytes" ]; then
      echo "$bytes" >"$mem/memory.limit_in_bytes"; changed=1
    fi
    riops=$2 wiops=$3 rbps=$4 wbps=$5; shift 5
    for dev in "$@"; do
      mm=$(lsblk -dno MAJ:MIN "$dev" | tr -d ' ')
      for pair in "read_iops_device:$riops" "write_iops_device:$wiops" "read_bps_device:$rbps" "write_bps_device:$wbps"; do
        f=$blk/blkio.throttle.${pair%%:*} want=${pair#*:}
        have=$(awk -v k="$mm" '$1 == k {print $2}' "$f")
        if [ "$want" = 0 ]; then
          [ -z "$have" ] || { echo "$mm 0" >"$f"; changed=1; }
        elif [ "$have" != "$want" ]; then
          echo "$mm $want" >"$f"; changed=1
        fi
      done
    done
    ;;
  drop)
    sync
    [ -d "$mem" ] && echo 0 >"$mem/memory.force_empty"
    changed=1
    ;;
  *) echo "usage: wb-cgroup.sh apply|drop HOST ..." >&2; exit 2 ;;
esac
[ "$changed" = 1 ] && echo CHANGED
exit 0
