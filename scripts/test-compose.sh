#!/usr/bin/env bash
# make test-compose: docker-compose.yml built and run for real, on this machine's Podman.
#   1. Podman (rootful, runc, default ulimits) with a private config and storage under $STATE, and
#      `podman system service` on a socket of this run, so the real Compose CLI (bin/docker-compose)
#      drives it through DOCKER_HOST.
#   2. Local stand-ins for the upstream base images (they cannot be pulled here): a bookworm root
#      made by debootstrap (cached in $STATE), imported as localhost/wb-debian:bookworm, and
#      golang / airflow / postgres / redis images derived from it (docker/standin/).
#   3. The stack's images built from their Dockerfiles with the stand-ins as build args, a
#      throwaway .env (random secrets), `compose up`, every service healthy.
#   4. rate_peak with the smoke profile triggered through the REST API v2, its run awaited, and the
#      rating's result.json read from MinIO (published port, S3 signature): it must have converged.
#   5. Teardown, also on failure: compose down -v, leftover containers/volumes/network, loop
#      devices of the SUT's volume, the Podman service, the run's secrets.
# Every wait is bounded. Not part of `make test` (it takes tens of minutes; docs/docker.md).
case ${1-} in -h|--help) sed -n '2,/^[^#]/s/^# \{0,1\}//p' "$0"; exit 0 ;; esac   # the header above
set -euo pipefail
REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$REPO"

STATE=${WB_COMPOSE_STATE:-/var/tmp/workbench/compose}   # cache: Debian root, image storage, Go cache
PROJECT=${WB_COMPOSE_PROJECT:-wbcompose}
API_PORT=${WB_TEST_API_PORT:-18080}          # not the repo's 8080 / 9000 / 9001 (make ui, scripts/minio.sh)
MINIO_PORT=${WB_TEST_MINIO_PORT:-19000}
CONSOLE_PORT=${WB_TEST_MINIO_CONSOLE_PORT:-19001}
PROM_PORT=${WB_TEST_PROMETHEUS_PORT:-19090}
UP_TIMEOUT_S=${WB_TEST_UP_TIMEOUT_S:-1200}
RUN_TIMEOUT_S=${WB_TEST_RUN_TIMEOUT_S:-2400}
BUILD_TIMEOUT_S=${WB_TEST_BUILD_TIMEOUT_S:-3600}   # per image
COMPOSE_BIN=$REPO/bin/docker-compose
DEBIAN_IMG=localhost/wb-debian:bookworm
GO_VERSION=go1.26.8                          # the stand-in golang image = golang:1.26.8-bookworm

log() { printf '[%s +%4ds] %s\n' "$(date -u +%H:%M:%S)" "$SECONDS" "$*"; }
die() { log "FAIL: $*"; exit 1; }

[ "$(id -u)" -eq 0 ] || die "needs root (rootful Podman, debootstrap, loop devices of the SUT)"
[ -x "$COMPOSE_BIN" ] || die "$COMPOSE_BIN missing: make compose"
scripts/install-podman.sh
for port in "$API_PORT" "$MINIO_PORT" "$CONSOLE_PORT" "$PROM_PORT"; do
  ! ss -Hltn "sport = :$port" | grep -q LISTEN || die "127.0.0.1:$port is in use (set WB_TEST_*_PORT)"
done

mkdir -p "$STATE" && chmod 0700 "$STATE" "$(dirname "$STATE")" 2>/dev/null || true
RUN=$(mktemp -d "$STATE/run.XXXXXX")          # this run: podman config, socket, .env (0700)
LOGS=$STATE/logs/$(date -u +%Y%m%dT%H%M%SZ)
mkdir -p "$LOGS"

# --- Podman: runc, cgroupfs (no systemd), ulimits within this process's hard limits ------------
nofile=$(ulimit -Hn); [ "$nofile" = unlimited ] || [ "$nofile" -gt 65536 ] && nofile=65536
# (nproc above 32768 is refused here even below the hard limit)
nproc=$(ulimit -Hu); [ "$nproc" = unlimited ] || [ "$nproc" -gt 16384 ] && nproc=16384
cat > "$RUN/containers.conf" <<EOF
[containers]
default_ulimits = ["nofile=$nofile:$nofile", "nproc=$nproc:$nproc"]
log_driver = "k8s-file"
[engine]
runtime = "runc"
cgroup_manager = "cgroupfs"
events_logger = "file"
events_logfile_path = "$STATE/podman-events.log"
tmp_dir = "/run/wb-podman/libpod"
[network]
network_config_dir = "$STATE/cni"
EOF
cat > "$RUN/storage.conf" <<EOF
[storage]
driver = "overlay"
graphroot = "$STATE/storage"
runroot = "/run/wb-podman/storage"
EOF
export CONTAINERS_CONF=$RUN/containers.conf CONTAINERS_STORAGE_CONF=$RUN/storage.conf
export DOCKER_HOST=unix://$RUN/podman.sock
unset DOCKER_CONTEXT COMPOSE_FILE COMPOSE_PROJECT_NAME
had_bridge=$(ip -br link show cni-podman0 >/dev/null 2>&1 && echo yes || echo no)

svc_pid="" health_pid="" compose_used=no
# the real Compose CLI against the Podman service, with the Podman override (an array: `timeout` runs it)
COMPOSE=("$COMPOSE_BIN" -p "$PROJECT" -f docker-compose.yml -f docker/standin/compose.podman.yml --env-file "$RUN/.env")
compose() { timeout 300 "${COMPOSE[@]}" "$@"; }

detach_loops() {  # loop devices backed by files of the SUT's volume (never any other)
  local vol=$STATE/storage/volumes/${PROJECT}_ganesha-state/_data inodes dev name ino majmin
  [ -d "$vol" ] || return 0
  inodes=" $(find "$vol" -xdev -type f -printf '%i ' 2>/dev/null) "
  dev=$(stat -c '%Hd:%Ld' "$vol")
  while read -r name ino majmin; do
    [ -n "$name" ] && [ "$majmin" = "$dev" ] || continue
    case $inodes in *" $ino "*) log "teardown: detaching $name (left by the SUT)"; losetup -d "$name" || true ;; esac
  done < <(losetup -l -n -O NAME,BACK-INO,BACK-MAJ:MIN 2>/dev/null)
}

teardown() {
  local rc=$?
  set +e
  trap - EXIT INT TERM
  log "teardown (exit status $rc)"
  if [ -n "$health_pid" ]; then   # let a running check finish (no orphaned exec), then stop it
    touch "$RUN/health.stop"
    for _ in $(seq 60); do kill -0 "$health_pid" 2>/dev/null || break; sleep 1; done
    kill "$health_pid" 2>/dev/null; wait "$health_pid" 2>/dev/null
  fi
  if [ "$compose_used" = yes ] && [ -n "$svc_pid" ]; then
    compose ps -a > "$LOGS/ps-final.txt" 2>&1
    for s in airflow-worker airflow-scheduler airflow-apiserver airflow-init ganesha; do
      timeout 60 "${COMPOSE[@]}" logs --no-color --tail 400 "$s" > "$LOGS/$s.log" 2>&1
    done
    timeout 300 "${COMPOSE[@]}" down -v --remove-orphans --timeout 30 > "$LOGS/down.log" 2>&1 \
      || log "teardown: compose down failed (see $LOGS/down.log); removing by label"
  fi
  ids=$(timeout 60 podman ps -aq --filter "label=com.docker.compose.project=$PROJECT" 2>/dev/null)
  [ -z "$ids" ] || timeout 120 podman rm -f -v $ids >/dev/null 2>&1
  detach_loops
  vols=$(timeout 60 podman volume ls -q --filter "label=com.docker.compose.project=$PROJECT" 2>/dev/null)
  [ -z "$vols" ] || timeout 120 podman volume rm -f $vols >/dev/null 2>&1
  timeout 60 podman network rm -f "${PROJECT}_wb" >/dev/null 2>&1
  rm -rf "/var/lib/cni/networks/${PROJECT}_wb"    # host-local IPAM state: stale reservations
  if [ -n "$svc_pid" ]; then kill "$svc_pid" 2>/dev/null; wait "$svc_pid" 2>/dev/null; fi
  # conmon of an exec session (a healthcheck cut short by the removal) can outlive its container:
  # only those of this state directory's storage, by pid
  for pid in $(pgrep -f -- "-b $STATE/storage/overlay-containers/" 2>/dev/null); do kill "$pid" 2>/dev/null; done
  [ "$had_bridge" = yes ] || ip link del cni-podman0 2>/dev/null
  rm -rf "$RUN"
  if [ "$rc" -eq 0 ]; then log "test-compose: PASSED in ${SECONDS}s"; else log "test-compose: FAILED (logs: $LOGS)"; fi
  exit "$rc"
}
trap teardown EXIT
trap 'exit 143' INT TERM

# timeout bounds the service's life even if this script is killed with SIGKILL.
timeout 6h podman system service --time=0 "$DOCKER_HOST" > "$LOGS/podman-service.log" 2>&1 &
svc_pid=$!
for _ in $(seq 60); do curl -fsS --unix-socket "$RUN/podman.sock" http://d/_ping >/dev/null 2>&1 && break; sleep 0.5; done
curl -fsS --unix-socket "$RUN/podman.sock" http://d/_ping >/dev/null || die "podman system service did not answer within 30 s ($LOGS/podman-service.log)"
log "podman $(podman version -f '{{.Server.Version}}') service on $DOCKER_HOST (runc, ulimits nofile=$nofile nproc=$nproc)"

# --- Stand-in base images ------------------------------------------------------------------
build() {  # build NAME LOGNAME podman-build-args...: bounded, niced, log to a file
  local name=$1 logname=$2 t0=$SECONDS; shift 2
  if ! timeout "$BUILD_TIMEOUT_S" nice -n 19 podman build --layers "$@" > "$LOGS/build-$logname.log" 2>&1; then
    tail -n 40 "$LOGS/build-$logname.log" | sed 's/^/    /'
    die "building $name failed (log: $LOGS/build-$logname.log)"
  fi
  log "built $name ($((SECONDS - t0)) s)"
}

if ! podman image exists "$DEBIAN_IMG"; then
  if [ ! -s "$STATE/bookworm-rootfs.tar" ]; then
    log "debootstrap: a Debian bookworm root from deb.debian.org (once; cached in $STATE)"
    root=$STATE/rootfs.tmp
    rm -rf "$root"
    timeout 1200 nice -n 19 debootstrap --variant=minbase --include=ca-certificates bookworm "$root" \
      http://deb.debian.org/debian > "$LOGS/debootstrap.log" 2>&1 || die "debootstrap failed ($LOGS/debootstrap.log)"
    printf '%s\n' "deb http://deb.debian.org/debian bookworm main" \
      "deb http://deb.debian.org/debian bookworm-updates main" \
      "deb http://deb.debian.org/debian-security bookworm-security main" > "$root/etc/apt/sources.list"
    # This machine's local CAs (its https egress): trusted by the stand-ins, for apt, pip and Go.
    if compgen -G "/usr/local/share/ca-certificates/*.crt" >/dev/null; then
      cp /usr/local/share/ca-certificates/*.crt "$root/usr/local/share/ca-certificates/"
      chroot "$root" update-ca-certificates >/dev/null
      printf '[global]\ncert = /etc/ssl/certs/ca-certificates.crt\n' > "$root/etc/pip.conf"
    fi
    rm -rf "$root"/var/cache/apt/archives/*.deb "$root"/var/lib/apt/lists/*
    tar -C "$root" -cf "$STATE/bookworm-rootfs.tar.tmp" . && mv "$STATE/bookworm-rootfs.tar.tmp" "$STATE/bookworm-rootfs.tar"
    rm -rf "$root"
  fi
  podman import --change 'CMD ["bash"]' "$STATE/bookworm-rootfs.tar" "$DEBIAN_IMG" > /dev/null
  log "imported $DEBIAN_IMG"
fi

goroot=$(go env GOROOT 2>/dev/null) || die "the golang stand-in copies this machine's Go $GO_VERSION: no go on PATH"
[ "$("$goroot/bin/go" env GOVERSION)" = "$GO_VERSION" ] || die "the golang stand-in needs Go $GO_VERSION, $goroot has $("$goroot/bin/go" env GOVERSION)"
build "stand-in golang ($GO_VERSION)" standin-golang --build-arg "DEBIAN_BASE=$DEBIAN_IMG" \
  -f "$REPO/docker/standin/golang.Dockerfile" --ignorefile "$REPO/docker/standin/golang.Dockerfile.dockerignore" \
  -t localhost/wb-standin-golang:1.26.8-bookworm "$goroot"
for s in airflow postgres redis; do
  build "stand-in $s" "standin-$s" --build-arg "DEBIAN_BASE=$DEBIAN_IMG" -f "docker/standin/$s.Dockerfile" \
    --ignorefile "docker/standin/$s.Dockerfile.dockerignore" -t "localhost/wb-standin-$s:bookworm" .
done

# --- A throwaway .env: docker/env.example with random secrets, test ports, the stand-ins -------
umask 077
python3 - "$RUN/.env" "$RUN/admin.pw" <<PY
import base64, os, secrets, sys
out = {}
for line in open("docker/env.example"):
    line = line.strip()
    if line and not line.startswith("#"):
        k, _, v = line.partition("=")
        out[k] = secrets.token_urlsafe(24) if v == "CHANGE-ME" else v
out["AIRFLOW_FERNET_KEY"] = base64.urlsafe_b64encode(os.urandom(32)).decode()
out.update(AIRFLOW_API_PORT="$API_PORT", MINIO_API_PORT="$MINIO_PORT", MINIO_CONSOLE_PORT="$CONSOLE_PORT",
           PROMETHEUS_PORT="$PROM_PORT",
           WB_DEBIAN_BASE="$DEBIAN_IMG", WB_GOLANG_BASE="localhost/wb-standin-golang:1.26.8-bookworm",
           WB_AIRFLOW_BASE="localhost/wb-standin-airflow:bookworm",
           WB_POSTGRES_IMAGE="localhost/wb-standin-postgres:bookworm",
           WB_REDIS_IMAGE="localhost/wb-standin-redis:bookworm")
open(sys.argv[1], "w").write("".join(f"{k}={v}\n" for k, v in out.items()))
open(sys.argv[2], "w").write(out["AIRFLOW_ADMIN_PASSWORD"] + "\n")
PY
# S3 credentials for curl's SigV4 signing (a config file: never on a command line)
( . "$RUN/.env"; printf 'user = "%s:%s"\n' "$MINIO_ROOT_USER" "$MINIO_ROOT_PASSWORD" > "$RUN/s3.curlrc"
  echo "${WB_S3_BUCKET:-workbench}" > "$RUN/bucket" )
umask 022
compose_used=yes
compose config --quiet || die "compose config failed"

# --- The stack's images, from docker-compose.yml's build sections -------------------------------
# podman build (not `compose build`: Compose's builder needs BuildKit, which Podman does not
# serve); context, Dockerfile, its .dockerignore, args and tag all come from `compose config`.
compose config --format json > "$RUN/config.json"
gomod=$(go env GOMODCACHE)
mkdir -p "$STATE/go-build"
while IFS=$'\t' read -r svc image context dockerfile args; do
  extra=()
  [ -f "$context/$dockerfile.dockerignore" ] && extra+=(--ignorefile "$context/$dockerfile.dockerignore")
  for a in $args; do extra+=(--build-arg "$a"); done
  # The Go module cache of this machine and a build cache: volumes of the RUN steps only.
  build "$image ($svc)" "$svc" "${extra[@]}" -v "$gomod:/go/pkg/mod" -v "$STATE/go-build:/root/.cache/go-build" \
    -f "$context/$dockerfile" -t "$image" "$context"
done < <(python3 - "$RUN/config.json" <<'PY'
import json, sys
seen = set()
for name, s in sorted(json.load(open(sys.argv[1]))["services"].items()):
    b = s.get("build")
    if not b or s["image"] in seen:
        continue
    seen.add(s["image"])
    args = " ".join(f"{k}={v}" for k, v in sorted((b.get("args") or {}).items()))
    print("\t".join([name, s["image"], b["context"], b.get("dockerfile", "Dockerfile"), args]))
PY
)

# --- Up ----------------------------------------------------------------------------------------
rm -rf "/var/lib/cni/networks/${PROJECT}_wb"      # no stale reservation of a fixed address
python3 scripts/podman-health.py --project "$PROJECT" --max-s 14400 --stop-file "$RUN/health.stop" &
health_pid=$!
log "compose up (bounded: $UP_TIMEOUT_S s)"
if ! timeout "$UP_TIMEOUT_S" "${COMPOSE[@]}" --progress plain up -d --no-build --pull never > "$LOGS/up.log" 2>&1; then
  tail -n 30 "$LOGS/up.log" | sed 's/^/    /'
  die "compose up failed or timed out after $UP_TIMEOUT_S s (log: $LOGS/up.log)"
fi
end=$((SECONDS + 600))
while :; do
  compose ps -a --format json > "$RUN/ps.json" 2>/dev/null || true
  states=$(python3 - "$RUN/ps.json" <<'PY'
import json, sys
rows = [json.loads(ln) for ln in open(sys.argv[1]) if ln.strip()]
rows = rows[0] if len(rows) == 1 and isinstance(rows[0], list) else rows
ok = lambda r: ((r["Service"] == "airflow-init" and r["State"] == "exited" and r.get("ExitCode") == 0)
                or (r["State"] == "running" and r.get("Health") in ("healthy", "")))
print(" ".join(f"{r['Service']}={r['State']}/{r.get('Health') or '-'}" for r in rows if not ok(r)) or
      ("" if rows else "no-containers"))
PY
)
  [ -z "$states" ] && break
  [ $SECONDS -lt $end ] || die "not healthy within 600 s: $states"
  [ "$states" = "${prev:-}" ] || log "waiting for: $states"
  prev=$states
  sleep 10
done
log "stack up: every service healthy, airflow-init exited 0"
compose ps --format 'table {{.Service}}\t{{.Status}}\t{{.Ports}}' | sed 's/^/    /'

# --- rate_peak through the REST API ----------------------------------------------------------
if ! python3 scripts/compose-rate-peak.py --url "http://127.0.0.1:$API_PORT" --password-file "$RUN/admin.pw" \
    --conf '{"profile": "smoke"}' --run-timeout-s "$RUN_TIMEOUT_S" | tee "$RUN/trigger.out"; then
  die "rate_peak did not succeed"
fi
run_id=$(sed -n 's/^dag_run_id=//p' "$RUN/trigger.out")

# The rating's objects and its result's key, by the workbench's own code in the worker; then the
# result object itself from the host, through MinIO's published port.
result_key=$(timeout 120 "${COMPOSE[@]}" exec -T airflow-worker python -c '
import sys
from workbench.params.plan import rating_id_for
from workbench.store.s3 import open_store
rid = rating_id_for("rate_peak", sys.argv[1])
st = open_store()
keys = st.list_keys(st.rating_prefix(rid))
print(f"objects: {len(keys)} under {st.url(st.rating_prefix(rid))}", file=sys.stderr)
print(st.result_key(rid))' "$run_id") || die "could not list the rating's objects"
bucket=$(cat "$RUN/bucket")
curl -fsS -K "$RUN/s3.curlrc" --aws-sigv4 "aws:amz:us-east-1:s3" -o "$RUN/result.json" \
  "http://127.0.0.1:$MINIO_PORT/$bucket/$result_key" || die "GET $result_key from MinIO failed"
python3 - "$RUN/result.json" <<'PY' || die "the rating did not converge"
import json, math, sys
r = json.load(open(sys.argv[1]))
print(f"    result.json: peak_rate {r['peak_rate']:.0f} ops/s, converged {r['converged']}, "
      f"bracket {r.get('bracket')}, CI {r.get('peak_rate_ci')}, trials {r.get('n_trials')}, reason {r.get('reason')!r}")
sys.exit(0 if r["converged"] is True and isinstance(r["peak_rate"], (int, float)) and math.isfinite(r["peak_rate"])
         and r["peak_rate"] > 0 else 1)
PY
log "rate_peak converged: s3://$bucket/$result_key"
