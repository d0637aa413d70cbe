#!/usr/bin/env bash
# Interactive use: the Airflow UI (airflow standalone: api-server, scheduler, dag-processor,
# triggerer) on http://127.0.0.1:${WB_UI_PORT:-8080} with the local MinIO and workbench slots.
# Login (SimpleAuthManager): user `admin` with the password in $AIRFLOW_HOME/passwords.json (default
# .airflow/passwords.json, mode 0600, generated at first start; its `viewer` is read-only).
# rate_peak and map_surface are unpaused; nightly_regression starts paused (unpause it to rate the
# baselines on its cron). Ctrl-C stops Airflow; MinIO keeps running (scripts/minio.sh down stops it).
case ${1-} in -h|--help) sed -n '2,/^[^#]/s/^# \{0,1\}//p' "$0"; exit 0 ;; esac   # the header above
set -euo pipefail
source "$(dirname "$0")/airflow-env.sh"
# the users admin and viewer with their passwords generated once into a private file (never printed)
passwords=$AIRFLOW_HOME/passwords.json
python "$REPO/scripts/airflow_auth.py" passwords "$passwords"
auth_env=$(python "$REPO/scripts/airflow_auth.py" env "$passwords")
while IFS= read -r line; do export "$line"; done <<<"$auth_env"
export AIRFLOW__API__PORT="${WB_UI_PORT:-8080}"
export AIRFLOW__API__HOST=127.0.0.1
airflow_db_ready
airflow_unpause_on_demand || echo "warning: could not unpause rate_peak/map_surface (unpause them in the UI)" >&2
echo "Airflow UI: http://127.0.0.1:$AIRFLOW__API__PORT  (user admin, password in $passwords; results: MinIO console on ${WB_S3_ENDPOINT%:*}:9001)" >&2
exec airflow standalone
