#!/usr/bin/env bash
# The main job: rate the embedded default (web_server on slot1's local Ganesha, quick profile)
# through the rate_peak DAG, Airflow in-process (dag.test), results in the local MinIO.
# Extra arguments go to `python -m workbench.dagrun rate_peak`, e.g. --conf '{"memory_mb": 256}'.
case ${1-} in -h|--help) sed -n '2,/^[^#]/s/^# \{0,1\}//p' "$0"; exit 0 ;; esac   # the header above
set -euo pipefail
t0=$SECONDS
printf 'set-up: %-44s' "MinIO and the Airflow database" >&2
source "$(dirname "$0")/airflow-env.sh"
airflow_db_ready
echo " done ($((SECONDS - t0)) s)" >&2
echo "rate_peak: results s3://$WB_S3_BUCKET on $WB_S3_ENDPOINT, Airflow home $AIRFLOW_HOME" >&2
exec "$REPO/.venv/bin/python" -m workbench.dagrun rate_peak "$@"
