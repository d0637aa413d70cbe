#!/usr/bin/env bash
# Interactive use: the Airflow UI (airflow standalone: api-server, scheduler, dag-processor,
# triggerer) on http://127.0.0.1:${WB_UI_PORT:-8080} with the local MinIO and workbench slots.
# Login: every user is admin (SimpleAuthManager, local only). rate_peak and map_surface are
# unpaused; nightly_regression starts paused (unpause it to rate the baselines on its cron). Ctrl-C stops Airflow; MinIO keeps
# running (scripts/minio.sh down stops it).
case ${1-} in -h|--help) sed -n '2,/^[^#]/s/^# \{0,1\}//p' "$0"; exit 0 ;; esac   # the header above
set -euo pipefail
source "$(dirname "$0")/airflow-env.sh"
export AIRFLOW__CORE__SIMPLE_AUTH_MANAGER_ALL_ADMINS=True
export AIRFLOW__API__PORT="${WB_UI_PORT:-8080}"
export AIRFLOW__API__HOST=127.0.0.1
airflow_db_ready
airflow_unpause_on_demand || echo "warning: could not unpause rate_peak/map_surface (unpause them in the UI)" >&2
echo "Airflow UI: http://127.0.0.1:$AIRFLOW__API__PORT  (results: MinIO console on ${WB_S3_ENDPOINT%:*}:9001)" >&2
exec airflow standalone
