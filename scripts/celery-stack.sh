#!/usr/bin/env bash
# Distributed Airflow on this machine, without containers: Postgres (metadata database and Celery
# result backend) and Redis (Celery broker) from Debian's packages, and Airflow with the CeleryExecutor
# as separate processes: api-server, scheduler, dag-processor, triggerer and N Celery workers (one task
# at a time each, so a free worker takes the next task), watched by a supervisor.
#
#   celery-stack.sh up     [--dir D] [--api-port P] [--workers N]   start (idempotent), then the supervisor
#   celery-stack.sh down   [--dir D] [--purge]                      stop all (the supervisor first); --purge
#                                                                   deletes D and the database
#   celery-stack.sh status [--dir D]                                one line per process; exit 1 if one is down
#   celery-stack.sh env    [--dir D]                                the AIRFLOW__* lines (and WB_LEASE_STORE) for CLI calls
#   celery-stack.sh supervise [--dir D] [--workers N]               the supervisor's loop (`up` starts it)
#
# D (default /tmp/workbench/celery, mode 0700) holds `env` (generated at first start, mode 600:
# database and broker passwords, Airflow's JWT secret, Fernet key and API secret; reused later),
# passwords.json (mode 600, generated once: the UI/API users `admin` and read-only `viewer`),
# redis/ (config, append-only file), airflow/ (AIRFLOW_HOME: logs) and a pid file and a log per
# process. Postgres refuses to run as root, so its data directory belongs to the `postgres` user in
# /var/lib/postgresql/workbench/ (named in `env`). Everything listens on 127.0.0.1 only; the UI is
# http://127.0.0.1:P (default 8090): log in as admin with the password in D/passwords.json, as in
# `make ui` (scripts/airflow_auth.py). The workers run the tasks with
# this checkout's venv and slots (WB_SLOTS, WB_INVENTORY); the results store is WB_S3_* of the
# environment, else the local MinIO (scripts/minio.sh). The slot leases are in the stack's Postgres
# (database `workbench`; `env` prints its WB_LEASE_STORE), announced in
# ${WB_HOST_STATE:-/run/workbench}/lease-store (mode 600) while the stack is up, so that every entry
# point of this host, the CLI included, leases there without being told; a host-local lease store
# (WB_LEASE_STORE=file) is refused for more than one worker.
# The supervisor (pid file supervisor.pid, log supervisor.log) looks every 5 s at the Airflow
# processes (not Postgres, not Redis) and restarts a dead one (its leftover processes killed first; a
# worker under its old Celery name), at most 5 times per process in 10 minutes; then it logs that it
# gives up on that one (`status` shows it DOWN) until the next `up`, which starts a new supervisor.
# It ends when its pid file or D's `env` goes. WB_SUPERVISE_INTERVAL_S, WB_SUPERVISE_MAX_RESTARTS and
# WB_SUPERVISE_WINDOW_S override 5 s, 5 and 600 s.
# The live view (docs/guide-distributed.md): Debian's Prometheus on 127.0.0.1:9090 (another free port
# when 9090 is taken at the first start; `status` prints it), its config generated in D/prometheus/
# (python -m workbench.measure.live_config config), data in D/prometheus/data (7 days), the rules and the
# console page workbench.html of monitoring/prometheus/; it scrapes every second the slots' live
# endpoints (127.0.0.1:9651..9655, WB_METRICS_PORT_BASE+1..+5) and Debian's node exporter, which
# the stack starts on 127.0.0.1:9100 (or a free port) with the cpu, meminfo, diskstats, netdev and
# loadavg collectors. Both are supervised like the Airflow processes; without the packages (make
# celery installs them) `up` warns and goes on without them.
# A task whose worker died is failed after 30 s without a heartbeat and retried after the DAG's retry
# delay (5-10 s) on a free worker, the restarted one included: running again within 60 s of the
# death. AIRFLOW__SCHEDULER__TASK_INSTANCE_HEARTBEAT_TIMEOUT[_DETECTION_INTERVAL] in the caller's
# environment override these two defaults (30 s, checked every 5 s); its other AIRFLOW__* keys pass
# through.
set -euo pipefail

REPO="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
VENV_BIN=$REPO/.venv/bin
die() { echo "celery-stack.sh: $*" >&2; exit 1; }
say() { echo "celery-stack.sh: $*" >&2; }

usage() { sed -n '2,/^[^#]/s/^# \{0,1\}//p' "${BASH_SOURCE[0]}"; }     # the header above
[ $# -ge 1 ] || { usage >&2; die "an action is needed (up|down|status|env|supervise; --help)"; }
[ "$1" != help ] || { usage; exit 0; }
for arg in "$@"; do case $arg in -h|--help) usage; exit 0 ;; esac; done     # before any state is made
case $1 in up|down|status|env|supervise) ;; *) die "unknown action '$1' (up|down|status|env|supervise; --help)" ;; esac
action=$1; shift
dir=/tmp/workbench/celery api_port='' workers=2 purge=''
while [ $# -gt 0 ]; do
  case $1 in
    --dir) [ $# -ge 2 ] || die "--dir needs a value"; dir=$2; shift 2 ;;
    --api-port) [ $# -ge 2 ] || die "--api-port needs a value"; api_port=$2; shift 2 ;;
    --workers) [ $# -ge 2 ] || die "--workers needs a value"; workers=$2; shift 2 ;;
    --purge) purge=1; shift ;;
    *) die "unknown option '$1'" ;;
  esac
done
[ -z "$api_port" ] || { [[ $api_port =~ ^[0-9]+$ ]] && [ "$api_port" -ge 1 ] && [ "$api_port" -le 65535 ]; } ||
  die "--api-port must be 1..65535, got '$api_port'"
[[ $workers =~ ^[0-9]+$ ]] && [ "$workers" -ge 1 ] && [ "$workers" -le 8 ] || die "--workers must be 1..8, got '$workers'"
# shellcheck source=private-dir.sh
source "$REPO/scripts/private-dir.sh"
# shellcheck source=minio-env.sh
source "$REPO/scripts/minio-env.sh"
[ "$(dirname "$dir")" != /tmp/workbench ] || private_dir /tmp/workbench
private_dir "$dir"
dir=$(cd "$dir" && pwd)
envfile=$dir/env home=$dir/airflow
PG_BIN=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -1)

env_value() { [ -r "$envfile" ] && sed -n "s/^$1=//p" "$envfile" | tail -1 || true; }
random_hex() { od -An -N"$1" -tx1 /dev/urandom | tr -d ' \n'; }
free_port() { "$VENV_BIN/python" -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
port_or_free() {   # port: it if nothing listens on it, else a free one
  "$VENV_BIN/python" -c 'import socket, sys; s=socket.socket(); p=int(sys.argv[1])
s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)     # as a server binds: TIME_WAIT is no use
try: s.bind(("127.0.0.1", p))
except OSError: s.bind(("127.0.0.1", 0))
print(s.getsockname()[1])' "$1"
}

# A pid file holds "PID START" (start time in clock ticks since boot, /proc/PID/stat field 22): Celery
# renames its processes, so the start time, not the command line, tells a reused pid apart.
start_time() { sed 's/.*) //' "/proc/$1/stat" 2>/dev/null | cut -d' ' -f20; }
proc_state() { sed 's/.*) //' "/proc/$1/stat" 2>/dev/null | cut -d' ' -f1; }
alive() { [ -n "$2" ] && [ "$(start_time "$1")" = "$2" ] && [ "$(proc_state "$1")" != Z ]; }    # pid start
write_pid() {      # name pid (atomically: the supervisor reads it while `up` writes it)
  echo "$2 $(start_time "$2")" >"$dir/.$1.pid.$$" && mv -f "$dir/.$1.pid.$$" "$dir/$1.pid"
}
running_pid() {    # name: its pid if that process still runs (a zombie does not), else nothing
  local pid start
  [ -r "$dir/$1.pid" ] && read -r pid start <"$dir/$1.pid" || return 0
  [[ $pid =~ ^[0-9]+$ ]] && alive "$pid" "$start" && echo "$pid" || true
}

# ------------------------------------------------------------------ credentials and ports (first start)
make_env() {
  # the UI/API users' passwords (kept; a stack set up before them gets them now): never printed
  "$VENV_BIN/python" "$REPO/scripts/airflow_auth.py" passwords "$dir/passwords.json"
  [ -s "$envfile" ] && return 0
  local tmp
  tmp=$(mktemp "$dir/.env.XXXXXX")
  chmod 600 "$tmp"
  {
    echo "WB_PG_PORT=$(free_port)"
    echo "WB_PG_PASSWORD=$(random_hex 18)"
    echo "WB_PG_DATA=/var/lib/postgresql/workbench/$(random_hex 6)"
    echo "WB_REDIS_PORT=$(free_port)"
    echo "WB_REDIS_PASSWORD=$(random_hex 18)"
    echo "WB_API_PORT=${api_port:-8090}"
    echo "WB_TRIGGER_LOG_PORT=$(free_port)"
    echo "WB_PROM_PORT=$(port_or_free 9090)"
    echo "WB_NODE_PORT=$(port_or_free 9100)"
    echo "AIRFLOW__API_AUTH__JWT_SECRET=$(random_hex 32)"
    echo "AIRFLOW__API__SECRET_KEY=$(random_hex 32)"
    echo "AIRFLOW__CORE__FERNET_KEY=$(head -c 32 /dev/urandom | base64 | tr '+/' '-_')"
  } >"$tmp"
  mv "$tmp" "$envfile"
}
monitor_env() {    # the live view's ports, added to an `env` made before them
  [ -n "$(env_value WB_PROM_PORT)" ] || echo "WB_PROM_PORT=$(port_or_free 9090)" >>"$envfile"
  [ -n "$(env_value WB_NODE_PORT)" ] || echo "WB_NODE_PORT=$(port_or_free 9100)" >>"$envfile"
}

# The Airflow configuration of every process of the stack (secrets from `env`).
airflow_env() {
  local port
  port=$(env_value WB_API_PORT)
  cat <<EOF
AIRFLOW_HOME=$home
AIRFLOW__CORE__EXECUTOR=CeleryExecutor
AIRFLOW__DATABASE__SQL_ALCHEMY_CONN=postgresql+psycopg2://airflow:$(env_value WB_PG_PASSWORD)@127.0.0.1:$(env_value WB_PG_PORT)/airflow
AIRFLOW__CELERY__BROKER_URL=redis://:$(env_value WB_REDIS_PASSWORD)@127.0.0.1:$(env_value WB_REDIS_PORT)/0
AIRFLOW__CELERY__RESULT_BACKEND=db+postgresql+psycopg2://airflow:$(env_value WB_PG_PASSWORD)@127.0.0.1:$(env_value WB_PG_PORT)/airflow
AIRFLOW__CELERY__WORKER_CONCURRENCY=1
AIRFLOW__CELERY__WORKER_PREFETCH_MULTIPLIER=1
AIRFLOW__CORE__DAGS_FOLDER=$REPO/dags
AIRFLOW__CORE__PLUGINS_FOLDER=$REPO/plugins
AIRFLOW__CORE__LOAD_EXAMPLES=False
AIRFLOW__CORE__DAGS_ARE_PAUSED_AT_CREATION=True
$("$VENV_BIN/python" "$REPO/scripts/airflow_auth.py" env "$dir/passwords.json")
AIRFLOW__API__HOST=127.0.0.1
AIRFLOW__API__PORT=$port
AIRFLOW__API__BASE_URL=http://127.0.0.1:$port
AIRFLOW__CORE__EXECUTION_API_SERVER_URL=http://127.0.0.1:$port/execution/
AIRFLOW__API_AUTH__JWT_SECRET=$(env_value AIRFLOW__API_AUTH__JWT_SECRET)
AIRFLOW__API__SECRET_KEY=$(env_value AIRFLOW__API__SECRET_KEY)
AIRFLOW__CORE__FERNET_KEY=$(env_value AIRFLOW__CORE__FERNET_KEY)
AIRFLOW__LOGGING__BASE_LOG_FOLDER=$home/logs
AIRFLOW__LOGGING__TRIGGER_LOG_SERVER_PORT=$(env_value WB_TRIGGER_LOG_PORT)
AIRFLOW__DAG_PROCESSOR__DAG_BUNDLE_STORAGE_PATH=$home/bundles
AIRFLOW__DAG_PROCESSOR__REFRESH_INTERVAL=10
AIRFLOW__SCHEDULER__TASK_INSTANCE_HEARTBEAT_TIMEOUT=${AIRFLOW__SCHEDULER__TASK_INSTANCE_HEARTBEAT_TIMEOUT:-30}
AIRFLOW__SCHEDULER__TASK_INSTANCE_HEARTBEAT_TIMEOUT_DETECTION_INTERVAL=${AIRFLOW__SCHEDULER__TASK_INSTANCE_HEARTBEAT_TIMEOUT_DETECTION_INTERVAL:-5}
WB_LEASE_STORE=$(lease_store)
EOF
}

# The slot leases: the stack's Postgres unless the caller names another store; a host-local one
# (file) only for a single worker.
stack_store() { echo "postgresql://airflow:$(env_value WB_PG_PASSWORD)@127.0.0.1:$(env_value WB_PG_PORT)/workbench"; }
lease_store() {
  case ${WB_LEASE_STORE:-} in
    '') stack_store ;;
    postgresql://*|postgres://*) echo "$WB_LEASE_STORE" ;;
    *) [ "$workers" -le 1 ] || die "WB_LEASE_STORE=${WB_LEASE_STORE%%://*}: a host-local lease store cannot serve $workers workers (two ratings could load one slot); unset it (the stack's Postgres) or use --workers 1"
       echo "$WB_LEASE_STORE" ;;
  esac
}

# The store announced to every entry point of this host (src/workbench/lease/store.py,
# host_store_spec: the CLI without WB_LEASE_STORE leases there too): written (mode 600) once
# Postgres is up, removed by `down` while it still names this stack's store.
host_lease_file() { echo "${WB_HOST_STATE:-/run/workbench}/lease-store"; }
announce_lease_store() {
  local f store
  f=$(host_lease_file) store=$(lease_store)
  case $store in postgresql://*|postgres://*) ;; *) return 0 ;; esac
  install -d -m 0700 "$(dirname "$f")"
  (umask 077 && printf '%s\n' "$store" >"$f.tmp") && mv -f "$f.tmp" "$f"
}
retract_lease_store() {
  local f
  f=$(host_lease_file)
  if [ -s "$f" ] && [ "$(cat "$f")" = "$(stack_store)" ]; then rm -f "$f"; fi
}

# Export the stack's configuration (the caller's AIRFLOW__* settings of other keys pass through).
export_airflow_env() {
  local line
  while IFS= read -r line; do export "$line"; done < <(airflow_env)
  export PATH="$VENV_BIN:$PATH" PYTHONPATH="$REPO/src:$REPO${PYTHONPATH:+:$PYTHONPATH}"
  export ANSIBLE_CONFIG=$REPO/ansible.cfg
}

# ------------------------------------------------------------------ Postgres
pg() { runuser -u postgres -- "$PG_BIN/$1" "${@:2}"; }
pg_up() {
  local data port
  data=$(env_value WB_PG_DATA) port=$(env_value WB_PG_PORT)
  [ -n "$PG_BIN" ] || die "Postgres not installed (make celery installs postgresql)"
  if [ ! -s "$data/PG_VERSION" ]; then
    install -d -m 0700 -o postgres -g postgres /var/lib/postgresql/workbench "$data"
    local pw=$data.pw
    install -m 600 -o postgres -g postgres /dev/null "$pw"
    env_value WB_PG_PASSWORD >"$pw"
    pg initdb -D "$data" -U airflow --pwfile="$pw" --auth=scram-sha-256 -E UTF8 >"$dir/postgres-initdb.log" 2>&1 ||
      { rm -f "$pw"; die "initdb failed; see $dir/postgres-initdb.log"; }
    rm -f "$pw"
  fi
  if ! pg pg_ctl status -D "$data" >/dev/null 2>&1; then
    pg pg_ctl start -D "$data" -w -t 60 -l "$data/postgres.log" \
      -o "-c listen_addresses=127.0.0.1 -p $port -c unix_socket_directories=$data" >/dev/null ||
      die "Postgres did not start within 60 s on 127.0.0.1:$port; see $data/postgres.log"
  fi
  PGPASSWORD=$(env_value WB_PG_PASSWORD) "$PG_BIN/psql" -h 127.0.0.1 -p "$port" -U airflow -d postgres -tAc \
    "SELECT 1 FROM pg_database WHERE datname='airflow'" | grep -q 1 ||
    PGPASSWORD=$(env_value WB_PG_PASSWORD) "$PG_BIN/createdb" -h 127.0.0.1 -p "$port" -U airflow airflow
  PGPASSWORD=$(env_value WB_PG_PASSWORD) "$PG_BIN/psql" -h 127.0.0.1 -p "$port" -U airflow -d postgres -tAc \
    "SELECT 1 FROM pg_database WHERE datname='workbench'" | grep -q 1 ||      # the slot leases
    PGPASSWORD=$(env_value WB_PG_PASSWORD) "$PG_BIN/createdb" -h 127.0.0.1 -p "$port" -U airflow workbench
}
pg_down() {
  local data
  data=$(env_value WB_PG_DATA)
  [ -n "$data" ] && [ -d "$data" ] || return 0
  pg pg_ctl status -D "$data" >/dev/null 2>&1 || return 0
  pg pg_ctl stop -D "$data" -m fast -w -t 60 >/dev/null || die "Postgres did not stop within 60 s"
}

# ------------------------------------------------------------------ Redis
redis_ping() { REDISCLI_AUTH=$(env_value WB_REDIS_PASSWORD) redis-cli -h 127.0.0.1 -p "$(env_value WB_REDIS_PORT)" ping 2>/dev/null | grep -q PONG; }
redis_up() {
  [ -n "$(running_pid redis)" ] && return 0
  command -v redis-server >/dev/null || die "redis-server not installed (make celery installs it)"
  ! redis_ping || die "127.0.0.1:$(env_value WB_REDIS_PORT) already serves a Redis not started from $dir"
  private_dir "$dir/redis"
  (umask 077; printf 'bind 127.0.0.1\nport %s\nrequirepass %s\ndir %s\nappendonly yes\nsave ""\nprotected-mode yes\n' \
    "$(env_value WB_REDIS_PORT)" "$(env_value WB_REDIS_PASSWORD)" "$dir/redis" >"$dir/redis/redis.conf")
  setsid nohup redis-server "$dir/redis/redis.conf" >"$dir/redis.log" 2>&1 </dev/null &
  write_pid redis $!
  local i
  for i in $(seq 1 100); do redis_ping && return 0; sleep 0.2; done
  die "Redis did not answer on 127.0.0.1:$(env_value WB_REDIS_PORT) within 20 s; see $dir/redis.log"
}

# ------------------------------------------------------------------ the live view: Prometheus, node exporter
PROM_BIN=/usr/bin/prometheus NODE_BIN=/usr/bin/prometheus-node-exporter MONITORING=$REPO/monitoring/prometheus
monitors() {       # the live view's processes whose package is installed
  [ ! -x "$PROM_BIN" ] || echo prometheus
  [ ! -x "$NODE_BIN" ] || echo node-exporter
}
prom_ready() { curl -sf -m 2 -o /dev/null "http://127.0.0.1:$(env_value WB_PROM_PORT)/-/ready"; }
start_monitor() {  # prometheus|node-exporter (idempotent)
  local name=$1 node="127.0.0.1:$(env_value WB_NODE_PORT)"
  [ -z "$(running_pid "$name")" ] || return 0
  if [ "$name" = node-exporter ]; then
    setsid nohup "$NODE_BIN" --web.listen-address="$node" --collector.disable-defaults --collector.cpu \
      --collector.meminfo --collector.diskstats --collector.netdev --collector.loadavg \
      >>"$dir/$name.log" 2>&1 </dev/null &
    write_pid "$name" $!
    return 0
  fi
  private_dir "$dir/prometheus"
  "$VENV_BIN/python" -m workbench.measure.live_config config --targets-host 127.0.0.1 --rules "$MONITORING/rules.yml" \
    $([ ! -x "$NODE_BIN" ] || echo "--node $node") >"$dir/prometheus/prometheus.yml" ||
    { say "warning: no Prometheus configuration (python -m workbench.measure.live_config config failed)"; return 1; }
  setsid nohup "$PROM_BIN" --config.file="$dir/prometheus/prometheus.yml" --storage.tsdb.path="$dir/prometheus/data" \
    --storage.tsdb.retention.time=7d --web.listen-address="127.0.0.1:$(env_value WB_PROM_PORT)" \
    --web.console.templates="$MONITORING/consoles" --web.console.libraries="$MONITORING/console_libraries" \
    >>"$dir/$name.log" 2>&1 </dev/null &
  write_pid "$name" $!
}
monitors_up() {    # started, Prometheus ready (bounded: 30 s); a warning, not a failure, when not
  local name i
  [ -n "$(monitors)" ] || { say "warning: no live view: prometheus and prometheus-node-exporter are not installed (make celery installs them)"; return 0; }
  for name in $(monitors); do start_monitor "$name" || true; done
  [ -x "$PROM_BIN" ] || return 0
  for i in $(seq 1 150); do prom_ready && return 0; [ -n "$(running_pid prometheus)" ] || break; sleep 0.2; done
  say "warning: Prometheus is not ready on 127.0.0.1:$(env_value WB_PROM_PORT); see $dir/prometheus.log"
}

# ------------------------------------------------------------------ Airflow
components() {
  local k
  echo api-server scheduler dag-processor triggerer
  for k in $(seq 1 "$1"); do echo "worker$k"; done
}
start_component() {    # name
  local name=$1 argv host
  case $name in prometheus|node-exporter) start_monitor "$name"; return ;; esac
  host=$("$VENV_BIN/python" -c 'import socket; print(socket.getfqdn())')
  [ -n "$(running_pid "$name")" ] && return 0
  case $name in
    worker*) argv=(celery worker --celery-hostname "$name@$host" --skip-serve-logs --without-mingle --without-gossip) ;;
    api-server) argv=(api-server --host 127.0.0.1 --port "$(env_value WB_API_PORT)") ;;
    *) argv=("$name") ;;
  esac
  if [[ $name == worker* ]]; then   # its task instances carry its Celery name as their hostname
    # and it has a working directory of its own (WB_WORKDIR: local rating copies, pending trial
    # records), as a worker on another host would: only the stack's Postgres leases are shared
    WB_WORKER_NAME=$name@$host AIRFLOW__CORE__HOSTNAME_CALLABLE=workbench.dagrun.worker_hostname \
      WB_WORKDIR="$dir/$name" setsid nohup "$VENV_BIN/airflow" "${argv[@]}" >>"$dir/$name.log" 2>&1 </dev/null &
  else
    setsid nohup "$VENV_BIN/airflow" "${argv[@]}" >>"$dir/$name.log" 2>&1 </dev/null &
  fi
  write_pid "$name" $!
}
stop_pid_file() {      # name group|leader: SIGTERM to its session (group) or to the process alone (leader:
                       # it ends its step itself), up to 30 s, then SIGKILL to its session (leader: if it still runs)
  local name=$1 how=$2 pid start i
  pid=$(running_pid "$name")
  if [ -n "$pid" ]; then
    start=$(start_time "$pid")
    if [ "$how" = group ]; then kill -TERM -- "-$pid" 2>/dev/null || true; else kill -TERM "$pid" 2>/dev/null || true; fi
    for i in $(seq 1 150); do
      alive "$pid" "$start" || break          # a zombie has ended (its reaper may be slow)
      sleep 0.2
    done
    [ "$how" = leader ] && ! alive "$pid" "$start" || kill -KILL -- "-$pid" 2>/dev/null || true
  fi
  rm -f "$dir/$name.pid"
}
stop_component() { stop_pid_file "$1" group; }   # name (a worker ends its tasks first)
wait_ready() {          # api-server answers, scheduler and triggerer healthy, every worker ready
  local port i k health
  port=$(env_value WB_API_PORT)
  for i in $(seq 1 180); do
    health=$(curl -sf -m 3 "http://127.0.0.1:$port/api/v2/monitor/health" 2>/dev/null || true)
    if [ -n "$health" ] && "$VENV_BIN/python" -c 'import json,sys; h=json.loads(sys.argv[1]);
sys.exit(0 if all((h.get(k) or {}).get("status")=="healthy" for k in ("metadatabase","scheduler","triggerer")) else 1)' "$health"; then
      for k in $(seq 1 "$workers"); do grep -q "worker$k@.* ready" "$dir/worker$k.log" || continue 2; done
      # The task-execution API (Cadwyn) builds its versioned routes at its first request, inside
      # the api-server's event loop: 8-31 s here with nothing else answered meanwhile. Pay it now,
      # not when the first task starts and the UI is in use.
      curl -sf -m 120 -o /dev/null "http://127.0.0.1:$port/execution/health" || true
      return 0
    fi
    for name in $(components "$workers"); do
      [ -n "$(running_pid "$name")" ] || die "airflow $name exited; see $dir/$name.log: $(tail -n 5 "$dir/$name.log" | tr '\n' ' ')"
    done
    sleep 1
  done
  die "the stack was not ready within 180 s (health: ${health:-no answer}); logs in $dir"
}

# ------------------------------------------------------------------ supervisor
# `supervise` (started by `up` under setsid like the components, its own pid file and log) restarts
# a dead Airflow process with start_component, at most WB_SUPERVISE_MAX_RESTARTS times per process in
# WB_SUPERVISE_WINDOW_S; `down` stops it first, so it never restarts what `down` stops.
kill_leftovers() {     # name: SIGKILL what a dead component left in its process group (setsid made it the leader)
  local pid start
  [ -r "$dir/$1.pid" ] && read -r pid start <"$dir/$1.pid" || return 0
  [[ $pid =~ ^[0-9]+$ ]] || return 0
  # Linux reuses no pid that still names a process group: with no process of that pid, or the dead
  # leader itself (a zombie), group -pid is the old one; a new process of that pid: the group is gone
  if ! kill -0 "$pid" 2>/dev/null || [ "$(start_time "$pid")" = "$start" ]; then
    kill -KILL -- "-$pid" 2>/dev/null || true
  fi
}
slog() { echo "$(date -u +%FT%TZ) $*"; }
supervise() {
  local interval=${WB_SUPERVISE_INTERVAL_S:-5} max=${WB_SUPERVISE_MAX_RESTARTS:-5} window=${WB_SUPERVISE_WINDOW_S:-600}
  local v name now t kept pid stopping=''
  for v in "$interval" "$max" "$window"; do
    [[ $v =~ ^[0-9]+$ ]] && [ "$v" -ge 1 ] && [ "$v" -le 86400 ] || die "WB_SUPERVISE_*: 1..86400 expected, got '$v'"
  done
  [ -s "$envfile" ] || die "nothing set up in $dir: run 'celery-stack.sh up' first"
  pid=$(running_pid supervisor)
  [ -z "$pid" ] || [ "$pid" = $$ ] || die "a supervisor of $dir runs already (pid $pid)"
  write_pid supervisor $$
  export_airflow_env
  declare -A restarts=() given_up=()
  trap 'stopping=1' TERM INT          # ends after the step it is in: no component half started
  slog "supervising $({ components "$workers"; monitors; } | tr '\n' ' ')every $interval s (at most $max restarts each in $window s)"
  while [ -z "$stopping" ]; do
    [ "$(running_pid supervisor)" = $$ ] || { slog "my pid file is gone or names another process: done"; break; }
    [ -s "$envfile" ] || { slog "$envfile is gone: done"; break; }
    for name in $(components "$workers") $(monitors); do
      [ -z "$stopping" ] || break
      [ -z "$(running_pid "$name")" ] && [ -z "${given_up[$name]:-}" ] || continue
      now=$(date +%s) kept=''
      for t in ${restarts[$name]:-}; do [ $((now - t)) -ge "$window" ] || kept+="$t "; done
      if [ "$(wc -w <<<"$kept")" -ge "$max" ]; then
        given_up[$name]=1
        slog "$name: down again after $max restarts in $window s: giving up on it (log $dir/$name.log; 'up' starts it and a new supervisor)"
        continue
      fi
      restarts[$name]="$kept$now"
      kill_leftovers "$name"
      if start_component "$name"; then
        slog "$name: down; restarted, pid $(running_pid "$name" | grep . || echo "- (exited at once)") (restart $(wc -w <<<"${restarts[$name]}") of at most $max in $window s)"
      else
        slog "$name: down; its restart failed"
      fi
    done
    [ -z "$stopping" ] || break
    sleep "$interval" &
    wait $! 2>/dev/null || kill $! 2>/dev/null || true      # a TERM ends the wait at once
  done
  [ "$(running_pid supervisor)" != $$ ] || rm -f "$dir/supervisor.pid"
  slog "stopped"
}
start_supervisor() {
  setsid nohup "$REPO/scripts/celery-stack.sh" supervise --dir "$dir" --workers "$workers" \
    >>"$dir/supervisor.log" 2>&1 </dev/null &
  write_pid supervisor $!
}
stop_supervisor() { stop_pid_file supervisor leader; }   # TERM: it ends the step it is in first

# rate_peak, map_surface and compare_ratings run when triggered (as with `make ui`); nightly_regression
# stays paused. Through the REST API as admin (a JWT from /auth/token; the header from a pipe, not
# argv) once the dag-processor has parsed them (bounded: 120 s).
unpause_on_demand() {
  local port d i token
  port=$(env_value WB_API_PORT)
  token=$("$VENV_BIN/python" "$REPO/scripts/airflow_auth.py" token "http://127.0.0.1:$port" "$dir/passwords.json") ||
    { say "warning: no admin token from http://127.0.0.1:$port/auth/token; unpause the DAGs in the UI"; return 0; }
  for d in rate_peak map_surface compare_ratings; do
    for i in $(seq 1 120); do
      curl -sf -m 5 -o /dev/null -X PATCH -H 'Content-Type: application/json' -d '{"is_paused": false}' \
        -H @<(printf 'Authorization: Bearer %s\n' "$token") "http://127.0.0.1:$port/api/v2/dags/$d" && continue 2
      sleep 1
    done
    say "warning: $d not parsed within 120 s; unpause it in the UI (see $dir/dag-processor.log)"
  done
}

up() {
  local name
  make_env
  monitor_env
  lease_store >/dev/null        # dies on a host-local lease store for several workers
  [ -z "$api_port" ] || [ "$api_port" = "$(env_value WB_API_PORT)" ] ||
    die "$dir was set up with api port $(env_value WB_API_PORT); 'down --purge' it to change the port"
  pg_up
  announce_lease_store
  redis_up
  [ -n "${WB_S3_ENDPOINT:-}" ] || minio_env_export
  export_airflow_env
  mkdir -p "$home"
  airflow db migrate >"$dir/db-migrate.log" 2>&1 || die "airflow db migrate failed; see $dir/db-migrate.log"
  airflow pools set workbench_sut "$(tr ',' '\n' <<<"${WB_SLOTS:-slot1,slot2}" | grep -c .)" \
    "SUT slots of the workbench (${WB_SLOTS:-slot1,slot2})" >/dev/null 2>&1 || die "could not create the workbench_sut pool"
  # slots whose holder is gone (a killed CLI, an ended run) are torn down before a worker leases one
  timeout 1200 "$VENV_BIN/python" -c 'from workbench.pipeline import reap_slots; reap_slots()' \
    >>"$dir/reaper.log" 2>&1 || say "warning: the reaper failed; see $dir/reaper.log"
  stop_supervisor               # a running one would start what is started below a second time
  monitors_up
  for name in $(components "$workers"); do start_component "$name"; done
  wait_ready
  start_supervisor              # a new one: its restart counts start at 0
  unpause_on_demand
  say "up: http://127.0.0.1:$(env_value WB_API_PORT) (user admin, password in $dir/passwords.json; $workers Celery workers, supervised; Postgres 127.0.0.1:$(env_value WB_PG_PORT), Redis 127.0.0.1:$(env_value WB_REDIS_PORT)); logs in $dir"
  [ -z "$(running_pid prometheus)" ] || say "live view: http://127.0.0.1:$(env_value WB_PROM_PORT)/consoles/workbench.html?slot=slot1 (Prometheus)"
}

down() {
  local name f
  [ -s "$envfile" ] || { say "nothing set up in $dir"; return 0; }
  stop_supervisor               # first: it would restart what is stopped below
  for f in "$dir"/*.pid; do
    [ -e "$f" ] || continue
    name=$(basename "$f" .pid)
    [ "$name" = redis ] || stop_component "$name"
  done
  local pid
  pid=$(running_pid redis)
  if [ -n "$pid" ]; then
    kill "$pid"
    for _ in $(seq 1 100); do kill -0 "$pid" 2>/dev/null || break; sleep 0.2; done
    kill -9 "$pid" 2>/dev/null || true
  fi
  rm -f "$dir/redis.pid"
  retract_lease_store
  pg_down
  if [ -n "$purge" ]; then
    local data
    data=$(env_value WB_PG_DATA)
    [[ $data == /var/lib/postgresql/workbench/* ]] && rm -rf "$data"
    rm -rf "$dir"
  fi
}

status() {
  local bad=0 name pid
  [ -s "$envfile" ] || die "nothing set up in $dir"
  if pg pg_ctl status -D "$(env_value WB_PG_DATA)" >/dev/null 2>&1; then echo "postgres: running, 127.0.0.1:$(env_value WB_PG_PORT)"
  else echo "postgres: DOWN"; bad=1; fi
  if redis_ping; then echo "redis: running, 127.0.0.1:$(env_value WB_REDIS_PORT)"; else echo "redis: DOWN"; bad=1; fi
  for f in "$dir"/*.pid; do
    [ -e "$f" ] || continue                  # none: every component stopped by `down`
    name=$(basename "$f" .pid)
    [ "$name" != redis ] || continue
    pid=$(running_pid "$name")
    if [ -n "$pid" ]; then echo "$name: running, pid $pid"; else echo "$name: DOWN (log $dir/$name.log)"; bad=1; fi
  done
  echo "ui: http://127.0.0.1:$(env_value WB_API_PORT)"
  [ -z "$(running_pid prometheus)" ] ||
    echo "live view: http://127.0.0.1:$(env_value WB_PROM_PORT)/consoles/workbench.html?slot=slot1 (Prometheus$(prom_ready || echo ', not ready'))"
  return $bad
}

case $action in
  up) up ;;
  down) down ;;
  status) status ;;
  env) [ -s "$envfile" ] || die "nothing set up in $dir: run 'celery-stack.sh up' first"; airflow_env ;;
  supervise) supervise ;;
  *) die "unknown action '$action' (up|down|status|env|supervise)" ;;
esac
