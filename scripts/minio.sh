#!/usr/bin/env bash
# The local MinIO (the results store) on 127.0.0.1.
#
#   minio.sh up     [--dir D] [--port P] [--console-port C]   start (idempotent); prints WB_S3_* lines
#   minio.sh down   [--dir D]                                 stop it
#   minio.sh status [--dir D]                                 exit 0 if running and healthy
#   minio.sh env    [--dir D]                                 print the WB_S3_* lines
#
# D (default /tmp/workbench/minio) holds data/, minio.pid, minio.log and env (the generated
# credentials, mode 600, reused by later runs). API port default 9000, console port = P+1.
# MINIO_ROOT_USER / MINIO_ROOT_PASSWORD, when set, replace the generated credentials.
case ${1-} in -h|--help) sed -n '2,/^[^#]/s/^# \{0,1\}//p' "$0"; exit 0 ;; esac   # the header above
set -euo pipefail

REPO="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
MINIO_BIN=${MINIO_BIN:-$REPO/bin/minio}
BUCKET=workbench

die() { echo "minio.sh: $*" >&2; exit 1; }

[ $# -ge 1 ] || die "usage: minio.sh up|down|status|env [--dir D] [--port P] [--console-port C]"
action=$1; shift
dir=/tmp/workbench/minio port= console_port=
while [ $# -gt 0 ]; do
  case $1 in
    --dir) [ $# -ge 2 ] || die "--dir needs a value"; dir=$2; shift 2 ;;
    --port) [ $# -ge 2 ] || die "--port needs a value"; port=$2; shift 2 ;;
    --console-port) [ $# -ge 2 ] || die "--console-port needs a value"; console_port=$2; shift 2 ;;
    *) die "unknown option '$1'" ;;
  esac
done
for p in "$port" "$console_port"; do
  [ -z "$p" ] || { [[ $p =~ ^[0-9]+$ ]] && [ "$p" -ge 1 ] && [ "$p" -le 65535 ]; } ||
    die "ports must be 1..65535, got '$p'"
done
pidfile=$dir/minio.pid logfile=$dir/minio.log envfile=$dir/env
# shellcheck source=private-dir.sh
source "$REPO/scripts/private-dir.sh"
[ "$(dirname "$dir")" != /tmp/workbench ] || private_dir /tmp/workbench
private_dir "$dir"        # holds the credentials that airflow-env.sh evaluates

# pid of our running MinIO, or nothing (a stale pid file or a reused pid does not count)
running_pid() {
  local pid
  pid=$(cat "$pidfile" 2>/dev/null) || return 0
  [[ $pid =~ ^[0-9]+$ ]] && [ -r "/proc/$pid/cmdline" ] || return 0
  tr '\0' ' ' <"/proc/$pid/cmdline" | grep -q "minio server" && echo "$pid" || true
}

env_value() { [ -r "$envfile" ] && sed -n "s/^$1=//p" "$envfile" | tail -1 || true; }
env_port() { local ep; ep=$(env_value WB_S3_ENDPOINT); echo "${ep##*:}"; }
healthy() { curl -sf -m 2 -o /dev/null "http://127.0.0.1:$1/minio/health/live"; }

write_env() {  # user password port
  local tmp
  tmp=$(mktemp "$dir/.env.XXXXXX")
  chmod 600 "$tmp"
  printf 'WB_S3_ENDPOINT=127.0.0.1:%s\nWB_S3_ACCESS_KEY=%s\nWB_S3_SECRET_KEY=%s\nWB_S3_BUCKET=%s\n' \
    "$3" "$1" "$2" "$BUCKET" >"$tmp"
  mv "$tmp" "$envfile"
}

up() {
  local pid user pass i
  pid=$(running_pid)
  if [ -n "$pid" ]; then
    [ -z "$port" ] || [ "$port" = "$(env_port)" ] ||
      die "already running (pid $pid) on port $(env_port), not $port; run 'minio.sh down --dir $dir' first"
    healthy "$(env_port)" || die "running (pid $pid) but http://127.0.0.1:$(env_port)/minio/health/live does not answer; see $logfile"
    cat "$envfile"
    return 0
  fi
  [ -x "$MINIO_BIN" ] || die "$MINIO_BIN not found (make minio builds it)"
  command -v curl >/dev/null || die "curl not found (make setup installs it)"
  port=${port:-$(env_port)}
  port=${port:-9000}
  console_port=${console_port:-$((port + 1))}
  user=${MINIO_ROOT_USER:-$(env_value WB_S3_ACCESS_KEY)}
  pass=${MINIO_ROOT_PASSWORD:-$(env_value WB_S3_SECRET_KEY)}
  [ -n "$user" ] || user="wb$(od -An -N6 -tx1 /dev/urandom | tr -d ' \n')"
  [ -n "$pass" ] || pass=$(od -An -N18 -tx1 /dev/urandom | tr -d ' \n')
  [ ${#user} -ge 3 ] && [ ${#pass} -ge 8 ] || die "MinIO needs a root user of >= 3 and a password of >= 8 characters"
  healthy "$port" && die "port $port already serves a MinIO not started from $dir; use --port or stop it"
  mkdir -p "$dir/data"
  write_env "$user" "$pass" "$port"
  MINIO_ROOT_USER=$user MINIO_ROOT_PASSWORD=$pass MINIO_UPDATE=off MINIO_BROWSER_REDIRECT=off \
    setsid nohup "$MINIO_BIN" server "$dir/data" --quiet --address "127.0.0.1:$port" \
    --console-address "127.0.0.1:$console_port" >"$logfile" 2>&1 </dev/null &
  pid=$!
  echo "$pid" >"$pidfile"
  for i in $(seq 1 150); do  # 30 s
    healthy "$port" && { cat "$envfile"; return 0; }
    kill -0 "$pid" 2>/dev/null ||
      die "MinIO exited at start (port $port or $console_port busy?): $(tail -n 3 "$logfile" | tr '\n' ' ')"
    sleep 0.2
  done
  kill "$pid" 2>/dev/null || true
  die "MinIO did not answer http://127.0.0.1:$port/minio/health/live within 30 s; see $logfile"
}

down() {
  local pid i
  pid=$(running_pid)
  if [ -z "$pid" ]; then rm -f "$pidfile"; echo "minio.sh: not running ($dir)" >&2; return 0; fi
  kill "$pid"
  for i in $(seq 1 50); do
    kill -0 "$pid" 2>/dev/null || { rm -f "$pidfile"; return 0; }
    sleep 0.2
  done
  kill -9 "$pid" 2>/dev/null || true
  rm -f "$pidfile"
}

case $action in
  up) up ;;
  down) down ;;
  status)
    pid=$(running_pid)
    [ -n "$pid" ] || die "not running ($dir)"
    healthy "$(env_port)" || die "pid $pid runs but port $(env_port) does not answer the health check"
    echo "minio: running, pid $pid, http://$(env_value WB_S3_ENDPOINT), data $dir/data" ;;
  env) [ -s "$envfile" ] || die "no $envfile yet: run 'minio.sh up' first"; cat "$envfile" ;;
  *) die "unknown action '$action' (up|down|status|env)" ;;
esac
