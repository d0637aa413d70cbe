#!/bin/sh
# Entrypoint of the ssh-managed workbench containers (loadgen; ganesha in ansible mode):
# authorize Ansible's public key (written by airflow-init into the wb-ssh volume), make this
# container's own host keys, then exec the command (default: sshd in the foreground).
set -eu
key=${WB_AUTHORIZED_KEY:-/keys/id_ed25519.pub}
i=0
while [ ! -s "$key" ]; do
  if [ "$i" -ge 60 ]; then
    echo "wb-ssh-entrypoint: no public key at $key after 60 s: airflow-init writes it into the" \
         "wb-ssh volume (docker compose up airflow-init; see its log)" >&2
    exit 1
  fi
  sleep 1
  i=$((i + 1))
done
install -m 0600 "$key" /root/.ssh/authorized_keys
ssh-keygen -A >/dev/null
mkdir -p /run/sshd
exec "$@"
