#!/usr/bin/env bash
# Main job (for now): one fstress trial against a local Ganesha slot, result printed and kept.
#   WORKLOAD (web_server)  RATE ops/s (500)  DURATION s (20)  WARMUP s (5)  RESULTS_DIR (results/)
set -euo pipefail
cd "$(dirname "$0")/.."
workload=${WORKLOAD:-web_server}
rate=${RATE:-500}
duration=${DURATION:-20}
warmup=${WARMUP:-5}
results=${RESULTS_DIR:-results}
slot=main
mkdir -p "$results"
out="$results/$(date -u +%Y%m%dT%H%M%SZ)-$workload-$rate.json"

echo "==> starting Ganesha in slot '$slot'" >&2
eval "$(scripts/ganesha-slot.sh up "$slot")"
trap 'scripts/ganesha-slot.sh down "$slot" >&2' EXIT
conn=(--server "$NFS_SERVER" --mount-port "$MOUNT_PORT" --export "$EXPORT")
in_slot() { ip netns exec "$SLOT_NS" "$@"; }

echo "==> file set for $workload at $rate ops/s (created over NFS, reused when compatible)" >&2
in_slot bin/fstress fileset "${conn[@]}" --workload "$workload" --rate "$rate"
echo "==> trial: $workload, $rate ops/s offered, ${warmup}s warm-up + ${duration}s measured" >&2
rc=0
in_slot bin/fstress run "${conn[@]}" --workload "$workload" --rate "$rate" \
  --duration "$duration" --warmup "$warmup" --json "$out" || rc=$?
[ -f "$out" ] || { echo "no result written (fstress exit $rc)" >&2; exit 1; }
python3 - "$out" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
print(f"\nresult: {sys.argv[1]}")
print(f"offered {r['offered_rate']:.0f} ops/s, achieved {r['achieved_rate']:.1f} ops/s over {r['duration_s']:.0f} s, {r['ops_total']} ops")
print(f"latency ms: mean {r['mean_ms']:.3f} (std {r['std_ms']:.3f})  p50 {r['p50_ms']:.3f}  p95 {r['p95_ms']:.3f}  p99 {r['p99_ms']:.3f}  max {r['max_ms']:.3f}")
print(f"errors {r['errors']}, timeouts {r['timeouts']}, retransmits {r['retransmits']}, send lag p99 {r['send_lag_ms']['p99']:.3f} ms, generator saturated: {r['generator_saturated']}")
PY
exit $rc
