# Sourced by main-job.sh and ui.sh: Airflow for this checkout (SQLite + LocalExecutor under
# .airflow/, the repo's dags/ and plugins/ (a run's "Why λ*" tab), no examples) and the results
# store's WB_S3_* from the local MinIO.
REPO="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
export PATH="$REPO/.venv/bin:$PATH"
export AIRFLOW_HOME="${AIRFLOW_HOME:-$REPO/.airflow}"
export AIRFLOW__CORE__DAGS_FOLDER="$REPO/dags"
export AIRFLOW__CORE__PLUGINS_FOLDER="$REPO/plugins"
export AIRFLOW__CORE__LOAD_EXAMPLES=False
export AIRFLOW__CORE__EXECUTOR="${AIRFLOW__CORE__EXECUTOR:-LocalExecutor}"
# new DAGs start paused: nightly_regression would otherwise rate its baselines at once
export AIRFLOW__CORE__DAGS_ARE_PAUSED_AT_CREATION=True
mkdir -p "$AIRFLOW_HOME"
# the default home holds the database, the JWT secret and the UI passwords: private to its owner
[ "$AIRFLOW_HOME" != "$REPO/.airflow" ] || chmod 700 "$AIRFLOW_HOME"
# MinIO: start it (idempotent) and take its endpoint and generated credentials
# shellcheck source=minio-env.sh
source "$REPO/scripts/minio-env.sh"
minio_env_export
airflow_db_ready() {
  airflow db migrate >"$AIRFLOW_HOME/db-migrate.log" 2>&1 ||
    { echo "airflow db migrate failed; see $AIRFLOW_HOME/db-migrate.log" >&2; return 1; }
  airflow pools set workbench_sut 2 "SUT slots of the local workbench (slot1, slot2)" >/dev/null 2>&1 ||
    { echo "could not create the workbench_sut pool" >&2; return 1; }
}
airflow_unpause_on_demand() {   # on-demand DAGs run when triggered; nightly stays paused
  airflow dags reserialize >"$AIRFLOW_HOME/reserialize.log" 2>&1 || return 1
  airflow dags unpause rate_peak >/dev/null && airflow dags unpause map_surface >/dev/null &&
    airflow dags unpause compare_ratings >/dev/null
}
