#!/usr/bin/env bash
# Sourced by airflow-env.sh and celery-stack.sh: minio_env_export starts the local MinIO
# (minio.sh up, idempotent) and exports the WB_S3_* lines it prints, each value taken literally —
# never evaluated by the shell, whatever the credentials hold.
minio_env_export() {
  local lines line key value
  lines=$("$REPO/scripts/minio.sh" up) || return 1
  while IFS= read -r line; do
    key=${line%%=*} value=${line#*=}
    [[ $line == *=* && $key =~ ^WB_S3_[A-Z_]+$ ]] || { echo "minio-env.sh: unexpected line from minio.sh: ${key:0:40}" >&2; return 1; }
    export "$key=$value"
  done <<<"$lines"
}
