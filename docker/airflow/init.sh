#!/usr/bin/env bash
# airflow-init of docker-compose.yml: one-shot, idempotent set-up of the stack (runs on every
# `docker compose up`; a second run changes nothing but rewrites the same values).
#   1. Ansible's ssh key pair in $WB_SSH_DIR (kept once made; ganesha/loadgen authorize the .pub)
#   2. the UI password file of SimpleAuthManager from AIRFLOW_ADMIN_USER / AIRFLOW_ADMIN_PASSWORD
#   3. airflow db migrate
#   4. pool workbench_sut with WB_SUT_SLOTS slots (bounds concurrent ratings: one per SUT slot)
#   5. connection workbench_s3 from WB_S3_* (read by workbench.store.s3.S3Config.from_airflow)
set -euo pipefail

need() { # need VAR...: fail naming every missing variable
  local missing=() v
  for v in "$@"; do [ -n "${!v:-}" ] || missing+=("$v"); done
  if [ ${#missing[@]} -gt 0 ]; then
    echo "airflow-init: missing environment variable(s): ${missing[*]} (set them in .env, template docker/env.example)" >&2
    exit 2
  fi
}
need AIRFLOW_ADMIN_USER AIRFLOW_ADMIN_PASSWORD AIRFLOW__CORE__SIMPLE_AUTH_MANAGER_PASSWORDS_FILE \
     WB_S3_ENDPOINT WB_S3_ACCESS_KEY WB_S3_SECRET_KEY WB_S3_BUCKET WB_SUT_SLOTS

case $WB_SUT_SLOTS in
  '' | *[!0-9]* | 0) echo "airflow-init: WB_SUT_SLOTS must be a positive integer, got '$WB_SUT_SLOTS'" >&2; exit 2 ;;
esac
case $WB_S3_ENDPOINT in
  *:*) s3_host=${WB_S3_ENDPOINT%:*} s3_port=${WB_S3_ENDPOINT##*:} ;;
  *) echo "airflow-init: WB_S3_ENDPOINT must be host:port, got '$WB_S3_ENDPOINT'" >&2; exit 2 ;;
esac
case ${WB_S3_SECURE:-false} in
  1 | true | True | TRUE | yes) s3_secure=true ;;
  *) s3_secure=false ;;
esac

ssh_dir=${WB_SSH_DIR:-/opt/workbench-ssh}
if [ ! -s "$ssh_dir/id_ed25519" ]; then
  ssh-keygen -q -t ed25519 -N '' -C workbench-ansible -f "$ssh_dir/id_ed25519"
  echo "airflow-init: made the Ansible ssh key $ssh_dir/id_ed25519"
fi
chmod 0600 "$ssh_dir/id_ed25519"
chmod 0644 "$ssh_dir/id_ed25519.pub"

python - <<'PY'
import json, os
path = os.environ["AIRFLOW__CORE__SIMPLE_AUTH_MANAGER_PASSWORDS_FILE"]
tmp = path + ".tmp"
with open(os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600), "w") as f:
    json.dump({os.environ["AIRFLOW_ADMIN_USER"]: os.environ["AIRFLOW_ADMIN_PASSWORD"]}, f)
    f.write("\n")
os.replace(tmp, path)
print(f"airflow-init: wrote the UI password of {os.environ['AIRFLOW_ADMIN_USER']} to {path}")
PY

airflow db migrate
airflow pools set workbench_sut "$WB_SUT_SLOTS" "NFS servers under test: one running rating per SUT slot"
airflow connections delete workbench_s3 >/dev/null 2>&1 || true
extra=$(printf '{"bucket": "%s", "secure": %s}' "$WB_S3_BUCKET" "$s3_secure")
# --opt=value: a generated secret may start with "-", which argparse takes for an option
airflow connections add workbench_s3 --conn-type generic --conn-host "$s3_host" --conn-port "$s3_port" \
  --conn-login="$WB_S3_ACCESS_KEY" --conn-password="$WB_S3_SECRET_KEY" --conn-extra "$extra" \
  --conn-description "Workbench results store (MinIO of docker-compose.yml)"
echo "airflow-init: done"
